"""Every benchmark script runs with tiny sizes and prints its JSON line (the figures themselves
come from `make bench`, never from tests), and the line is consistent: each ratio is the
quotient of the two figures it is computed from (within their rounding), counts and formulas
agree with the settings, and `meets_target` follows from the ratio and the target."""

import json
import math
import re
import statistics
import subprocess

import pytest
from conftest import REPO_ROOT, SHARED_DATA, python_stand_in, run_benchmark

TINY = ["--layers", "1", "--embed-dim", "64", "--repeats", "1", "--warmup-steps", "1"]


def _half_unit(places: int) -> float:
    return 0.5 * 10.0**-places


def assert_quotient(quotient: float, numerator: float, denominator: float, places: tuple) -> None:
    """quotient == round(n / d, places[0]) for the unrounded n and d that numerator and
    denominator show rounded to places[1] and places[2] decimals."""
    q_places, n_places, d_places = places
    slack = 1e-9
    low = (numerator - _half_unit(n_places)) / (denominator + _half_unit(d_places))
    high = (numerator + _half_unit(n_places)) / (denominator - _half_unit(d_places))
    assert denominator > _half_unit(d_places), (numerator, denominator)
    assert low - _half_unit(q_places) - slack <= quotient <= high + _half_unit(q_places) + slack, (
        quotient,
        numerator,
        denominator,
    )


def test_bert2d_benchmark_line_is_consistent():
    (figures,) = run_benchmark("bench_bert2d_training_throughput.py", *TINY)
    assert (figures["arch_a"], figures["arch_b"]) == ("bert2d_base", "roberta_base")
    assert figures["dimensions"]["layers"] == 1 and figures["dimensions"]["embed_dim"] == 64
    # design.md §4.2: BERT2D has exactly (M + 2) * d_model more parameters than BERT (M + 2 rows).
    subword_rows = figures["bert2d_options"]["max_intermediate_subwords"] + 2
    assert figures["params_a"] - figures["params_b"] == subword_rows * 64
    tokens_per_step = (
        figures["batch_shape"]["sentences"] * figures["batch_shape"]["tokens_per_sentence"]
    )
    for side in "ab":
        assert_quotient(
            figures[f"tokens_per_s_{side}"], tokens_per_step, figures[f"seconds_per_step_{side}"],
            (2, 0, 4),
        )  # fmt: skip
    assert_quotient(
        figures["ratio"], figures["tokens_per_s_a"], figures["tokens_per_s_b"], (4, 2, 2)
    )
    assert figures["target"] == 0.95 and figures["meets_target"] == (figures["ratio"] >= 0.95)
    assert 0 < figures["masked_tokens"] < tokens_per_step


def test_bert_elmo_benchmark_line_is_consistent():
    (figures,) = run_benchmark("bench_bert_elmo_training_throughput.py", *TINY)
    words = figures["words_per_batch"]
    assert 0 < figures["distinct_words_per_batch"] <= words
    # Side a reads one token per word plus <s> and </s> per sentence; b reads the pieces.
    assert figures["batch_shape_a"][0] == figures["batch_shape_b"][0] == figures["sentences"]
    for side in "ab":
        assert_quotient(
            figures[f"words_per_s_{side}"], words, figures[f"seconds_per_step_{side}"], (2, 0, 4)
        )
    assert_quotient(figures["ratio"], figures["words_per_s_a"], figures["words_per_s_b"], (4, 2, 2))
    assert_quotient(
        figures["ratio_tokens"], figures["tokens_per_s_a"], figures["tokens_per_s_b"], (4, 2, 2)
    )
    assert figures["target"] == 0.7 and figures["meets_target"] == (figures["ratio"] >= 0.7)


def test_turkish_segmentation_benchmark_compares_every_line_and_scales(tmp_path):
    pytest.importorskip("zemberek", reason="zemberek-python is needed for Turkish segmentation")
    text = tmp_path / "tr.txt"
    sentences = [
        "Kitaplarımızı okuduk.",
        "Ali'ye göre, evlerde kimse yok.",
        "Yüzü yüze bakar mısın?",
    ]
    text.write_text("\n".join(sentences * 4) + "\n", encoding="utf-8")
    lines = run_benchmark(
        "bench_turkish_segmentation.py", str(text), "--workers", "2", "--scaling-lines", "6",
        "--scaling-rounds", "1",
    )  # fmt: skip
    assert len(lines) == 1, lines
    (figures,) = lines
    assert (figures["compared_lines"], figures["differing_lines"]) == (12, 0)
    cold, reference = figures["project_cold"], figures["reference"]
    assert reference["lines"] == 12
    assert_quotient(
        figures["ratio"], cold["tokens_per_s_cpu"], reference["tokens_per_s_cpu"], (2, 1, 1)
    )
    assert_quotient(
        figures["ratio_warm"],
        figures["project_warm"]["tokens_per_s_cpu"],
        reference["tokens_per_s_cpu"],
        (2, 1, 1),
    )
    # The last of the "after N lines" figures is the whole file's.
    assert figures["ratio_after_lines"]["12"] == figures["ratio"]
    assert figures["project_cold_tokens_per_s_cpu_after_lines"]["12"] == cold["tokens_per_s_cpu"]
    scaling = figures["workers_scaling"]
    assert scaling["lines"] == 6
    runs = scaling["runs"]
    assert [run["workers"] for run in runs] == [1, 2]
    assert scaling["speedup_wall"] == round(runs[0]["wall_s"] / runs[1]["wall_s"], 2)
    assert scaling["speedup_wall_per_round"] == [scaling["speedup_wall"]]
    assert scaling["speedup_from_cpu_time"] == round(2 * runs[0]["cpu_s"] / runs[1]["cpu_s"], 2)
    (copies_wall,) = scaling["independent_copies_wall_s"]
    assert scaling["speedup_ceiling_independent_copies"] == round(
        2 * runs[0]["wall_s"] / copies_wall, 2
    )


def test_gpu_benchmark_runs_every_comparison_on_the_cpu():
    """bench_gpu_training.py is meant for a GPU (where none is lent it never runs otherwise):
    its --tiny CPU run goes through every comparison, so a change elsewhere that breaks it shows
    here rather than on the GPU machine."""
    lines = run_benchmark("bench_gpu_training.py", "--device", "cpu", "--dtype", "fp32", "--tiny")
    names = [figures["benchmark"] for figures in lines]
    assert names == [
        "translation_training",
        "translation_training",
        "translation_generation",
        "mlm_training",
        "whole_word_attention",
    ], names
    rate_keys = {"tokens/s": "tokens_per_s", "sentences/s": "sentences_per_s"}
    for figures in lines[:4]:
        a, b = figures["a"], figures["b"]
        assert a["model_flops_per_step"] > 0 and b["model_flops_per_step"] > 0
        rate = rate_keys[figures["ratio_is"].split(" of ")[0]]
        assert figures["ratio"] == pytest.approx(a[rate] / b[rate], rel=1e-3)


def test_fairseq_train_benchmark_times_both_updates():
    """bench_fairseq_train.py's --tiny CPU run: two whole fairseq-train runs (fairseq's own
    update, then the project's), each timed over the same updates, and a consistent line."""
    python, _ = python_stand_in()  # its fairseq-train runs are forked, not started afresh
    (figures,) = run_benchmark(
        "bench_fairseq_train.py", "--device", "cpu", "--tiny", "--python", python
    )
    assert (figures["benchmark"], figures["arch"], figures["dtype"]) == (
        "fairseq_train", "tp_transformer_base", "bf16",
    )  # fmt: skip
    for update in ("stock", "project"):
        run = figures[update]
        assert run["timed_updates"] == figures["updates"] - figures["timed_from_update"] > 0
        assert_quotient(run["updates_per_s"], run["timed_updates"], run["seconds"], (3, 9, 3))
    assert_quotient(
        figures["ratio"], figures["project"]["updates_per_s"], figures["stock"]["updates_per_s"],
        (4, 3, 3),
    )  # fmt: skip


def _parameters(arch: str, vocab_size: int) -> tuple:
    """Parameters of an arch built as the benchmarks build it, and the dictionary size."""
    import fairseq_struct.plugin  # noqa: F401  (registers the models)
    from fairseq_struct.testing.build_from_arch import build_model_from_arch, joined_dictionary

    dictionary = joined_dictionary(vocab_size)
    model = build_model_from_arch(arch, dictionary, seed=1)
    return sum(p.numel() for p in model.parameters()), len(dictionary)


def test_tp_training_benchmark_line_is_consistent():
    (figures,) = run_benchmark(
        "bench_tp_training_throughput.py",
        "--arch-a", "tp_transformer_tiny", "--arch-b", "transformer_relpos_tiny",
        "--vocab-size", "64", "--batch-size", "2", "--src-len", "6", "--tgt-len", "5",
        "--warmup-steps", "1", "--steps", "2", "--repeats", "3",
    )  # fmt: skip
    assert figures["benchmark"] == "tp_training_throughput"
    assert figures["batch_shape"] == {"sentences": 2, "src_len": 6, "tgt_len": 5}
    assert (figures["steps_per_repeat"], figures["repeats"]) == (2, 3)
    params_a, vocab = _parameters("tp_transformer_tiny", 64)
    params_b, _ = _parameters("transformer_relpos_tiny", 64)
    assert (figures["params_a"], figures["params_b"], figures["vocab_size"]) == (
        params_a,
        params_b,
        vocab,
    )
    assert figures["words_per_s_a"] > 0 and figures["words_per_s_b"] > 0
    assert_quotient(figures["ratio"], figures["words_per_s_a"], figures["words_per_s_b"], (4, 2, 2))
    assert figures["target"] == 0.9 and figures["meets_target"] == (figures["ratio"] >= 0.9)


def test_tp_generation_benchmark_line_is_consistent():
    """Against fairseq's stock transformer_tiny; the script itself raises unless every
    hypothesis of both models is exactly --steps tokens + EOS."""
    (figures,) = run_benchmark(
        "bench_tp_generation_speed.py",
        "--arch-tp", "tp_transformer_tiny", "--arch-stock", "transformer_tiny",
        "--vocab-size", "64", "--batch-size", "2", "--src-len", "6", "--steps", "4",
        "--beam", "2", "--warmup", "1", "--repeats", "3",
    )  # fmt: skip
    assert figures["benchmark"] == "tp_generation_speed"
    assert (figures["batch"], figures["steps"], figures["beam"]) == (2, 4, 2)
    params_tp, vocab = _parameters("tp_transformer_tiny", 64)
    params_stock, _ = _parameters("transformer_tiny", 64)
    assert (figures["params_tp"], figures["params_stock"], figures["vocab_size"]) == (
        params_tp,
        params_stock,
        vocab,
    )
    assert_quotient(
        figures["ratio"],
        figures["sentences_per_s_tp"],
        figures["sentences_per_s_stock"],
        (4, 3, 3),
    )
    assert figures["target"] == 0.9 and figures["meets_target"] == (figures["ratio"] >= 0.9)


def test_whole_word_attention_benchmark_line_is_consistent():
    (figures,) = run_benchmark(
        "bench_whole_word_attention.py",
        "--tokens", "256", "--embed-dim", "64", "--heads", "2",
        "--warmup-steps", "1", "--steps", "1", "--repeats", "3",
    )  # fmt: skip
    n, m, window = figures["tokens_n"], figures["words_m"], figures["window"]
    assert (n, window) == (256, 5) and 1 <= m <= n
    assert figures["pieces_per_word"] == round(n / m, 3)
    # design.md §4.4: m^2 + (2w + 1) n energies per head instead of n^2.
    assert figures["energies_per_head_formula"] == m * m + (2 * window + 1) * n
    assert figures["energies_per_head_measured"] == figures["energies_per_head_formula"]
    assert figures["energies_per_head_full"] == n * n
    assert figures["energy_ratio_vs_full"] == round(figures["energies_per_head_measured"] / n**2, 4)
    peak, seconds = figures["peak_mib"], figures["seconds"]
    assert set(peak) == set(seconds) == {"wwa", "mha", "relpos", "wwa_window"}
    assert_quotient(figures["memory_ratio"], peak["wwa"], peak["mha"], (4, 1, 1))
    assert_quotient(figures["memory_ratio_vs_relpos"], peak["wwa"], peak["relpos"], (4, 1, 1))
    assert_quotient(figures["time_ratio"], seconds["wwa"], seconds["mha"], (4, 4, 4))
    assert_quotient(figures["time_ratio_vs_relpos"], seconds["wwa"], seconds["relpos"], (4, 4, 4))
    assert_quotient(figures["relpos_memory_ratio"], peak["relpos"], peak["mha"], (4, 1, 1))
    assert_quotient(figures["relpos_time_ratio"], seconds["relpos"], seconds["mha"], (4, 4, 4))
    assert figures["meets_target"] == {
        "memory_ratio": figures["memory_ratio"] <= 2.0,
        "time_ratio": figures["time_ratio"] <= 2.0,
        "relpos_memory_ratio": figures["relpos_memory_ratio"] <= 1.5,
        "relpos_time_ratio": figures["relpos_time_ratio"] <= 2.0,
        "energies_match_formula": True,
    }


def test_relative_attention_kernels_benchmark_line_is_consistent():
    """Where flex_attention cannot run (on a CPU it has no backward; here its compiled kernels
    may not even build; at T = 24 the CPU kernel gets the 24 and 72 keys of the two variants
    wrong, so it is refused), the line says why for each variant and still carries the
    gather/scatter figures; a flex variant that ran agrees with gather/scatter."""
    (figures,) = run_benchmark(
        "bench_relative_attention_kernels.py",
        "--lengths", "24", "--batch", "2", "--heads", "2", "--head-dim", "16", "--clip", "3",
        "--warmup-steps", "1", "--steps", "1", "--repeats", "2",
    )  # fmt: skip
    assert (figures["T"], figures["batch"], figures["heads"], figures["clip"]) == (24, 2, 2, 3)
    assert figures["gather_scatter_ms"] > 0 and figures["gather_scatter_fwd_ms"] > 0
    assert figures["max_abs_err_vs_fp64"]["gather_scatter"] <= figures["tolerance"] == 1e-5
    assert set(figures["variants"]) == {"flex_lse", "flex_split"}
    if figures["device"] == "cpu":
        for report in figures["variants"].values():
            assert report["error"].startswith("KnownKernelFault: "), report
            assert "cpu_flex_attention_fault.py" in report["error"], report
    for name, report in figures["variants"].items():
        if "error" in report:
            assert "fwd_ms" not in report and report["error"], (name, report)
        else:
            assert report["within_tolerance"] is True, (name, report)
    if figures["flex_variant"] is None:
        assert all("error" in report for report in figures["variants"].values())
        assert figures["ratio_flex_over_gather_fwd"] is None
    else:
        assert_quotient(
            figures["ratio_flex_over_gather_fwd"],
            figures["flex_fwd_ms"],
            figures["gather_scatter_fwd_ms"],
            (4, 3, 3),
        )


def test_prepare_scale_benchmark_measures_each_size(tmp_path):
    """bench_prepare_scale.py at two tiny sizes of the demo grammar, bpe mode: one line per size
    with the whole tree's peak RSS, time, pairs/s and bytes written, then the summary."""
    lines = run_benchmark(
        "bench_prepare_scale.py", "--sizes", "300", "600", "--valid-size", "50",
        "--vocab-size", "200", "--tmp-dir", str(tmp_path),
    )  # fmt: skip
    assert [(figures["line"], figures.get("size")) for figures in lines] == [
        ("measurement", 300),
        ("measurement", 600),
        ("summary", None),
    ], lines
    for figures in lines[:2]:
        assert figures["benchmark"] == "prepare_scale" and figures["mode"] == "bpe"
        assert figures["peak_rss_mib"] > 0 and figures["bytes_written"] > 0
        # pairs_per_s is rounded to 0.1 and seconds to 0.001: a fast run (0.137 s) moves the
        # quotient of the rounded figures by more than a fixed tolerance.
        assert_quotient(figures["pairs_per_s"], figures["size"], figures["seconds"], (1, 0, 3))
    summary = lines[2]
    assert summary["sizes"] == [300, 600] and summary["peak_rss_ratio"] > 0
    assert isinstance(summary["meets_target"], bool)
    assert summary["extrapolated_36m"]["seconds"] > 0
    assert list(tmp_path.iterdir()) == []  # without --keep nothing is left behind


def test_translate_speed_benchmark_line_is_consistent(demo_translation_run):
    """bench_translate_speed.py on the session's demo model, the test set once: both commands
    translate the same 500 sentences with the same hypotheses."""
    checkpoint = demo_translation_run / "work" / "checkpoints-morph" / "checkpoint_best.pt"
    (figures,) = run_benchmark(
        "bench_translate_speed.py", "--data", str(demo_translation_run / "data-bin"),
        "--path", str(checkpoint), "--copies", "1", "--repeats", "1",
    )  # fmt: skip
    assert figures["sentences"] == 500 and figures["beam"] == 5
    assert figures["differing_lines"] == 0
    for side in ("translate", "generate"):
        assert_quotient(
            figures[f"sentences_per_s_{side}"], 500, figures[f"seconds_{side}"], (2, 0, 3)
        )
    assert_quotient(
        figures["ratio"],
        figures["sentences_per_s_translate"],
        figures["sentences_per_s_generate"],
        (4, 2, 2),
    )
    assert figures["target"] == 0.95 and figures["meets_target"] == (figures["ratio"] >= 0.95)


def test_suite_cpu_benchmark_compares_two_runs_and_takes_an_inventory(tmp_path):
    """bench_suite_cpu.py with HEAD as both commits, on a three-test file outside the clones (the
    suite's own conftest would make it minutes): each run's pytest summary, the ratio of the two
    CPU figures, the inventory's phases of each test, a child process's CPU in its test's; the
    failing test fails the benchmark, which names the run and still prints its line."""
    tests = tmp_path / "test_three.py"
    tests.write_text(
        "import subprocess, sys\nimport pytest\n\ndef test_child():\n"
        "    burn = 'import time\\nwhile time.process_time() < 0.6: pass'\n"
        "    subprocess.run([sys.executable, '-c', burn], check=True)\n\n"
        "@pytest.mark.skip(reason='shown')\ndef test_skipped():\n    pass\n\n"
        "def test_fails():\n    assert False\n",
        encoding="utf-8",
    )
    inventory = tmp_path / "inventory.jsonl"
    python, env = python_stand_in()
    result = subprocess.run(
        [python, "benchmarks/bench_suite_cpu.py", "--baseline", "HEAD", "--tests", str(tests),
         "--workers", "0", "--inventory", str(inventory), "--logs", str(tmp_path / "logs")],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr[-3000:]
    assert "error: the baseline run's tests failed" in result.stderr
    assert "error: the commit run's tests failed" in result.stderr
    (figures,) = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert figures["benchmark"] == "suite_cpu" and figures["baseline"] == figures["commit"]
    counts = {"passed": 1, "skipped": 1, "failed": 1}
    assert figures["baseline_tests"] == figures["tests"] == counts
    assert figures["baseline_cpu_s"] > 0 and figures["cpu_s"] > 0
    assert figures["ratio"] == pytest.approx(figures["cpu_s"] / figures["baseline_cpu_s"], abs=5e-4)
    assert figures["meets_target"] == (figures["ratio"] <= figures["target_ratio"] == 0.65)
    log = (tmp_path / "logs" / "commit.log").read_text("utf-8")
    assert "1 failed, 1 passed, 1 skipped" in log
    slowest = log.split("slowest 30 durations", 1)[1]  # pytest --durations=30: the slowest phases
    assert re.search(r"\d+\.\d+s call +\S*test_three\.py::test_child", slowest), slowest
    records = [json.loads(line) for line in inventory.read_text("utf-8").splitlines()]
    assert [(record["test"].split("::")[1], record["phase"]) for record in records] == [
        (test, phase)
        for test in ("test_child", "test_skipped", "test_fails")
        for phase in ("setup", "call", "teardown")
        if (test, phase) != ("test_skipped", "call")  # a skip mark stops it at setup
    ]
    assert all(record["cpu_s"] >= 0 and record["worker"] == "main" for record in records)
    # test_child's call: its child's 0.6 s of CPU counts (>= 0.5: the kernel accounts a reaped
    # child's time in 10 ms ticks, and 0.5 burnt once read 0.49)
    assert records[1]["cpu_s"] >= 0.5


def test_command_startup_benchmark_line_is_consistent():
    (figures,) = run_benchmark(
        "bench_command_startup.py", "--repeats", "1", "--commands", "score", "predict"
    )
    assert set(figures["help_cpu_s"]) == {"score", "predict"}
    assert set(figures["model_free_run_cpu_s"]) == {"score"}  # predict needs a model
    slowest = max(figures["slowest_help_cpu_s"], figures["slowest_model_free_run_cpu_s"])
    assert figures["slowest_help_cpu_s"] == max(figures["help_cpu_s"].values())
    # the figures are rounded before the quotient is taken
    assert figures["slowest_over_baseline"] == round(
        slowest / figures["baseline_plugin_import_cpu_s"], 3
    )
    over = {f"{name} --help": s for name, s in figures["help_cpu_s"].items() if s > 0.5}
    over.update(
        {f"{name} run": s for name, s in figures["model_free_run_cpu_s"].items() if s > 0.5}
    )
    assert figures["over_goal"] == over


def test_hf_import_benchmark_line_is_consistent():
    (figures,) = run_benchmark(
        "bench_hf_import.py", "--layers", "1", "--hidden-size", "64", "--vocab-size", "500",
        "--repeats", "1",
    )  # fmt: skip
    assert figures["model"] == {
        "layers": 1, "hidden_size": 64, "vocab_size": 500, "parameters": figures["model"]["parameters"]
    }  # fmt: skip
    # BertForPreTraining: embeddings, one layer, pooler, MLM transform and bias, NSP layer.
    d, v = 64, 500
    embeddings = v * d + 512 * d + 2 * d + 2 * d
    layer = 4 * (d * d + d) + 2 * d + (d * 4 * d + 4 * d) + (4 * d * d + d) + 2 * d
    heads = (d * d + d) + (d * d + d + 2 * d + v) + (2 * d + 2)
    assert figures["model"]["parameters"] == embeddings + layer + heads
    assert figures["weights_mib"] == round(4 * figures["model"]["parameters"] / 2**20, 1)
    assert_quotient(
        figures["rss_ratio_to_weights"], figures["import_peak_rss_mib"], figures["weights_mib"],
        (3, 1, 1),
    )  # fmt: skip
    assert_quotient(
        figures["seconds_ratio_to_transformers"], figures["import_s"],
        figures["transformers_load_s"], (3, 2, 2),
    )  # fmt: skip
    assert figures["meets_rss_goal"] == (figures["rss_ratio_to_weights"] <= figures["rss_goal"])


def test_finetune_vs_transformers_benchmark_line_is_consistent():
    """bench_finetune_vs_transformers.py --tiny: both sides trained on the same batches of real
    IMST sentences (the checks: the plugin's logged tokens and sentences per update, transformers'
    tokens, sentences and padded sizes, and the learning rates), and a consistent line."""
    if not (SHARED_DATA / "ud-tr-imst" / "tr_imst-ud-train.conllu").exists():
        pytest.skip(f"needs the UD IMST files of {SHARED_DATA}")
    (figures,) = run_benchmark("bench_finetune_vs_transformers.py", "--tiny")
    assert (figures["benchmark"], figures["tiny"]) == ("finetune_vs_transformers", True)
    model = figures["model"]
    assert (model["layers"], model["hidden_size"], model["vocab_size"]) == (2, 128, 2000)
    assert 0 < model["learned_pieces"] <= 2000
    window = figures["window"]
    assert (figures["updates"], window["from_update"], window["to_update"]) == (5, 1, 5)
    assert window["updates"] == 4 and 0 < window["real_tokens"] < window["padded_tokens"]
    assert figures["checks"] == {
        "plugin_batches_as_planned": True,
        "transformers_batches_as_planned": True,
        "lr_schedules_match": True,
    }
    keys = {
        "startup": "startup_s",
        "cpu_per_token": "cpu_s_per_token",
        "train_peak_rss": "train_peak_rss_mib",
        "predict_peak_rss": "predict_peak_rss_mib",
    }
    padding = round(1 - window["real_tokens"] / window["padded_tokens"], 4)
    for side in ("plugin", "transformers"):
        figures_of = figures[side]
        assert all(figures_of[key] > 0 for key in keys.values()), figures_of
        assert (figures_of["window_tokens"], figures_of["padding_share"]) == (
            window["real_tokens"], padding,
        )  # fmt: skip
        assert_quotient(
            figures_of["cpu_s_per_token"], figures_of["window_cpu_s"], window["real_tokens"],
            (9, 3, 0),
        )  # fmt: skip
        assert figures_of["train_s"] > figures_of["startup_s"]
        assert 0 <= figures_of["test_accuracy"][0] <= 100
    for name, key in keys.items():
        ratio = figures["ratios"][name]
        assert ratio == round(figures["plugin"][key] / figures["transformers"][key], 4)
        assert figures["meets_goal"][name] == (ratio <= figures["goals"][name])
    assert figures["goals"] == {
        "startup": 1.5, "cpu_per_token": 1.0, "predict_peak_rss": 1.1, "train_peak_rss": 1.0
    }  # fmt: skip


def test_finetune_vs_transformers_accuracy_line_is_consistent():
    """--accuracy --tiny: every batch of fairseq's epochs on both sides (the tiny training set
    ends in a batch fairseq splits, so an epoch is one batch more than ceil(sentences / 16)),
    and each side's mean and spread of its test accuracies. About 40 s, shared with nothing:
    the benchmark starts its eight processes (two seeds, each a training and a prediction a
    side) and builds its model and data itself, and its line is what the test checks."""
    if not (SHARED_DATA / "ud-tr-imst" / "tr_imst-ud-train.conllu").exists():
        pytest.skip(f"needs the UD IMST files of {SHARED_DATA}")
    (figures,) = run_benchmark(
        "bench_finetune_vs_transformers.py", "--tiny", "--accuracy", "--seeds", "1", "2",
        "--epochs", "1",
    )  # fmt: skip
    assert figures["benchmark"] == "finetune_vs_transformers_accuracy"
    sentences = figures["data"]["train_sentences"]
    assert figures["batches_per_epoch"] == math.ceil(sentences / 16) + 1
    assert figures["updates"] == figures["batches_per_epoch"] * figures["epochs"]
    assert figures["warmup_updates"] == figures["updates"] * 6 // 100
    assert figures["checks"] == {
        "plugin_batches_as_planned": True,
        "transformers_batches_as_planned": True,
        "lr_schedules_match": True,
    }
    for side in ("plugin", "transformers"):
        scores = figures[side]["test_accuracy"]
        assert len(scores) == 2 and all(0 <= score <= 100 for score in scores)
        assert figures[side]["mean"] == round(statistics.mean(scores), 2)
        assert figures[side]["std"] == round(statistics.stdev(scores), 2)
    difference = figures["plugin"]["mean"] - figures["transformers"]["mean"]
    assert figures["mean_difference"] == round(difference, 2)
