"""Every benchmark script runs with tiny sizes and prints one JSON line (the figures themselves
come from `make bench`, never from tests)."""

import json
import sys

import pytest
from conftest import REPO_ROOT, run_tool

TINY = ["--layers", "1", "--embed-dim", "64", "--repeats", "1", "--warmup-steps", "1"]


@pytest.mark.parametrize(
    "script", ["bench_bert2d_training_throughput.py", "bench_bert_elmo_training_throughput.py"]
)
def test_masked_lm_benchmark_prints_one_json_line(script):
    result = run_tool([sys.executable, f"benchmarks/{script}", *TINY], cwd=REPO_ROOT, timeout=300)
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 1, result.stdout
    figures = json.loads(lines[0])
    assert figures["ratio"] > 0 and isinstance(figures["meets_target"], bool)


def test_turkish_segmentation_benchmark_compares_every_line_and_scales(tmp_path):
    pytest.importorskip("zemberek", reason="zemberek-python is needed for Turkish segmentation")
    text = tmp_path / "tr.txt"
    sentences = [
        "Kitaplarımızı okuduk.",
        "Ali'ye göre, evlerde kimse yok.",
        "Yüzü yüze bakar mısın?",
    ]
    text.write_text("\n".join(sentences * 4) + "\n", encoding="utf-8")
    command = [sys.executable, "benchmarks/bench_turkish_segmentation.py", str(text)]
    command += ["--workers", "2", "--scaling-lines", "6", "--scaling-rounds", "1"]
    result = run_tool(command, cwd=REPO_ROOT, timeout=300)
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 1, result.stdout
    figures = json.loads(lines[0])
    assert (figures["compared_lines"], figures["differing_lines"]) == (12, 0)
    assert figures["ratio"] > 0 and figures["workers_scaling"]["lines"] == 6
    assert len(figures["workers_scaling"]["runs"]) == 2
    assert figures["workers_scaling"]["speedup_ceiling_independent_copies"] > 0


def test_gpu_benchmark_runs_every_comparison_on_the_cpu():
    """bench_gpu_training.py is meant for a GPU (where none is lent it never runs otherwise):
    its --tiny CPU run goes through every comparison, so a change elsewhere that breaks it shows
    here rather than on the GPU machine."""
    command = [sys.executable, "benchmarks/bench_gpu_training.py", "--device", "cpu"]
    command += ["--dtype", "fp32", "--tiny"]
    result = run_tool(command, cwd=REPO_ROOT, timeout=300)
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
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


def test_prepare_scale_benchmark_measures_each_size(tmp_path):
    """bench_prepare_scale.py at two tiny sizes of the demo grammar, bpe mode: one line per size
    with the whole tree's peak RSS, time, pairs/s and bytes written, then the summary."""
    command = [sys.executable, "benchmarks/bench_prepare_scale.py", "--sizes", "300", "600"]
    command += ["--valid-size", "50", "--vocab-size", "200", "--tmp-dir", str(tmp_path)]
    result = run_tool(command, cwd=REPO_ROOT, timeout=300)
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [(figures["line"], figures.get("size")) for figures in lines] == [
        ("measurement", 300),
        ("measurement", 600),
        ("summary", None),
    ], result.stdout
    for figures in lines[:2]:
        assert figures["benchmark"] == "prepare_scale" and figures["mode"] == "bpe"
        assert figures["peak_rss_mib"] > 0 and figures["bytes_written"] > 0
        assert figures["pairs_per_s"] == pytest.approx(figures["size"] / figures["seconds"], 1e-3)
    summary = lines[2]
    assert summary["sizes"] == [300, 600] and summary["peak_rss_ratio"] > 0
    assert isinstance(summary["meets_target"], bool)
    assert summary["extrapolated_36m"]["seconds"] > 0
    assert list(tmp_path.iterdir()) == []  # without --keep nothing is left behind
