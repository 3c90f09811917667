"""fairseq-struct translate on the session's demo model (conftest's `demo_translation_run`, a
tp_transformer_tiny trained by scripts/demo.sh and evaluated by scripts/evaluate.sh at beam 5):
the three ways to translate agree line for line, every input line gets its output line, bad
input names its line, and several checkpoints decode as fairseq's ensemble."""

import subprocess
from pathlib import Path
from typing import List

import pytest
import torch
from conftest import USER_DIR, python_stand_in, run_script, run_tool, venv_tool

from fairseq_struct.morph.length_limit import fitted_limit

TRANSLATE = ["-m", "fairseq_struct.inference.translate"]

HUB = """
import sys
from fairseq_struct.models.tp_transformer import TPTransformerModel
from fairseq_struct.morph.length_limit import fitted_limit
checkpoints, checkpoint, data, source, out = sys.argv[1:]
model = TPTransformerModel.from_pretrained(
    checkpoints, checkpoint, data_name_or_path=data, cpu=True
)
lines = open(source, encoding="utf-8").read().splitlines()
# The hub takes fairseq's generation options: the data's fitted limit, as evaluate.sh decodes.
max_len_a, max_len_b = fitted_limit(data)
translations = model.translate(lines, beam=5, max_len_a=max_len_a, max_len_b=max_len_b)
with open(out, "w", encoding="utf-8") as file:
    file.writelines(line + "\\n" for line in translations)
"""


def run_python(args: List[str], cwd: Path, stdin: bytes = b"") -> subprocess.CompletedProcess:
    """`python ARGS` (forked from the preloaded interpreter), standard input given, output
    bytes."""
    python, env = python_stand_in()
    return subprocess.run(
        [python, *args], input=stdin, cwd=cwd, env=env, capture_output=True, timeout=600
    )


def translate(args: List[str], cwd: Path, stdin: bytes = b"") -> subprocess.CompletedProcess:
    result = run_python([*TRANSLATE, *args], cwd, stdin)
    assert result.returncode == 0, result.stderr.decode(errors="replace")[-3000:]
    return result


@pytest.fixture(scope="module")
def demo(demo_translation_run) -> dict:
    work = demo_translation_run / "work"
    checkpoints = work / "checkpoints-morph"
    (interval,) = checkpoints.glob("checkpoint_*_*.pt")  # the one --keep-interval-updates kept
    return {
        "data": demo_translation_run / "data-bin",
        "best": checkpoints / "checkpoint_best.pt",
        "last": checkpoints / "checkpoint_last.pt",
        "interval": interval,
        "source": work / "raw" / "test.en",
        "evaluated": work / "eval-morph" / "hyp.txt",  # evaluate.sh, beam 5
    }


def lines_of(path: Path) -> List[str]:
    return path.read_text(encoding="utf-8").splitlines()


def test_translate_the_hub_interactive_and_evaluate_sh_give_the_same_hypotheses(demo, tmp_path):
    out = tmp_path / "test.tr"
    translate(
        ["--path", str(demo["best"]), "--data", str(demo["data"]), "--input", str(demo["source"]),
         "--output", str(out), "--beam", "5", "--cpu"],
        tmp_path,
    )  # fmt: skip
    evaluated = lines_of(demo["evaluated"])
    assert len(evaluated) == 500
    assert lines_of(out) == evaluated

    hub_out = tmp_path / "hub.tr"
    result = run_python(
        ["-c", HUB, str(demo["best"].parent), demo["best"].name, str(demo["data"]),
         str(demo["source"]), str(hub_out)],
        tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    assert lines_of(hub_out) == evaluated

    # docs/translating.md's stock fairseq-interactive line, given the data's fitted length limit.
    max_len_a, max_len_b = fitted_limit(demo["data"])
    interactive = run_tool(
        [venv_tool("fairseq-interactive"), str(demo["data"]), "--user-dir", USER_DIR,
         "--task", "translation_morph", "--path", str(demo["best"]),
         "--bpe", "struct_sentencepiece", "--sentencepiece-model", str(demo["data"] / "spm.model"),
         "--beam", "5", "--buffer-size", "1000", "--max-tokens", "12000", "--input",
         str(demo["source"]), "--cpu", "--max-len-a", str(max_len_a), "--max-len-b", str(max_len_b)],
        tmp_path,
    )  # fmt: skip
    detokenized = [
        line.split("\t")[2] for line in interactive.stdout.splitlines() if line[:2] == "D-"
    ]
    assert detokenized == evaluated


def test_every_input_line_gets_its_output_line_in_order(demo, tmp_path):
    sentences = lines_of(demo["source"])[:200]
    # 200 test sentences in one line: over the model's 1,024 source positions, so each sentence
    # is translated on its own and the translations are joined.
    long_line = " ".join(sentences)
    lines = [sentences[0], "", "   ", f"  {sentences[1]}   ", long_line, sentences[2]]
    stdin = "".join(line + "\n" for line in lines).encode()
    result = translate(["--path", str(demo["best"]), "--cpu"], tmp_path, stdin)  # data: its own
    output = result.stdout.decode().split("\n")
    assert output[-1] == "" and len(output) - 1 == len(lines)
    one_a_line = "".join(line + "\n" for line in sentences).encode()
    alone = translate(["--path", str(demo["best"]), "--cpu"], tmp_path, one_a_line)
    alone = alone.stdout.decode().splitlines()
    assert output[0] == alone[0] and output[5] == alone[2]
    assert output[1] == output[2] == ""  # empty and whitespace-only lines stay empty
    assert output[3] == alone[1]  # whitespace normalised as in the preparation
    assert output[4] == " ".join(alone)


def test_a_sentence_longer_than_the_model_takes_is_truncated_with_a_warning(demo, tmp_path):
    endless = " ".join(["the", "small", "boy"] * 400)  # 1,200 words and no sentence end
    result = translate(
        ["--path", str(demo["best"]), "--cpu"], tmp_path, f"Hi.\n{endless}\n".encode()
    )
    assert len(result.stdout.decode().splitlines()) == 2
    assert "<stdin>:2: a sentence of this line has more pieces than" in result.stderr.decode()


def test_invalid_utf8_stops_with_the_line_and_writes_nothing(demo, tmp_path):
    source = tmp_path / "bad.en"
    source.write_bytes(b"I see you.\nI \xe7an see.\n")
    result = run_python(
        [*TRANSLATE, "--path", str(demo["best"]), "--input", str(source), "--output", "out.tr",
         "--cpu"],
        tmp_path,
    )  # fmt: skip
    assert result.returncode == 1
    assert f"{source}:2: invalid UTF-8 at byte 2 of the line" in result.stderr.decode()
    assert not (tmp_path / "out.tr").exists()


def test_a_missing_data_directory_is_named(demo, tmp_path):
    result = run_python(
        [*TRANSLATE, "--path", str(demo["best"]), "--data", str(tmp_path), "--cpu"], tmp_path
    )
    assert result.returncode == 1
    assert f"{tmp_path}: no dict.en.txt" in result.stderr.decode()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only refusal")
def test_half_precision_without_a_gpu_is_refused(tmp_path):
    result = run_python([*TRANSLATE, "--path", "any.pt", "--bf16"], tmp_path)
    assert result.returncode == 1
    assert (
        "--bf16 needs a CUDA GPU (on the CPU, translation runs in fp32)" in result.stderr.decode()
    )


def test_nbest_lists_are_moses_style_best_first(demo, tmp_path):
    stdin = ("\n".join(lines_of(demo["source"])[:4]) + "\n").encode()
    best = translate(["--path", str(demo["best"]), "--cpu"], tmp_path, stdin).stdout.decode()
    nbest = translate(["--path", str(demo["best"]), "--cpu", "--nbest", "3"], tmp_path, stdin)
    rows = [line.split(" ||| ") for line in nbest.stdout.decode().splitlines()]
    assert [int(row[0]) for row in rows] == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    assert [row[1] for row in rows[::3]] == best.splitlines()
    for line in range(4):
        scores = [float(row[2]) for row in rows[3 * line : 3 * line + 3]]
        assert scores == sorted(scores, reverse=True) and all(score < 0 for score in scores)


def test_two_checkpoints_decode_as_one_ensemble_in_translate_and_evaluate_sh(demo, tmp_path):
    ensemble = f"{demo['last']}:{demo['interval']}"
    run_script(
        "evaluate.sh", str(demo["data"]), ensemble, str(demo["data"] / "test.raw.tr"),
        str(tmp_path / "eval"), "--beam", "5", "--", "--cpu",
    )  # fmt: skip
    out = tmp_path / "ensemble.tr"
    translate(
        ["--path", str(demo["last"]), "--path", str(demo["interval"]), "--input",
         str(demo["source"]), "--output", str(out), "--cpu"],
        tmp_path,
    )  # fmt: skip
    ensembled = lines_of(out)
    assert ensembled == lines_of(tmp_path / "eval" / "hyp.txt")
    # checkpoint_best.pt (validated at 500 and 600 updates) is one of the two: the other
    # took part.
    assert ensembled != lines_of(demo["evaluated"])
