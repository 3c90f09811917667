"""English→Inuktitut: fairseq-struct translate reads the languages and the Morfessor-segmented
SentencePiece model from an Inuktitut data directory and gives, line for line, what
scripts/evaluate.sh gives for the same checkpoint: syllabics, no morpheme marks. The model is a
few updates of tp_transformer_tiny on 200 pairs of the shared WMT20 sample (real syllabics; the
test skips where ../shared is absent): its translations are poor, but they are the same. Both
decode one sentence a batch: the near-ties of such a model's beams (hypotheses that repeat a
piece up to the length limit) would otherwise go either way with the batches' padding, which
differ (fairseq-generate sorts the test set by target length, the translate command by source
length); the trained demo model agrees at the default batches (test_translate_command.py)."""

import subprocess

import pytest
from conftest import (
    SHARED_DATA,
    python_stand_in,
    run_script,
    run_tool,
    tiny_train_args,
    venv_tool,
)

from fairseq_struct.pieces.markers import MORPHEME_BOUNDARY

WMT_SAMPLE = SHARED_DATA / "en-iu-wmt20-sample"
SPLITS = {"train": (0, 200), "valid": (200, 230), "test": (230, 242)}


def test_translate_gives_evaluate_sh_hypotheses_for_inuktitut(tmp_path):
    if not (WMT_SAMPLE / "sample.iu").exists():
        pytest.skip(f"shared WMT20 sample not found at {WMT_SAMPLE}")
    raw = tmp_path / "raw"
    raw.mkdir()
    for lang in ("en", "iu"):
        lines = (WMT_SAMPLE / f"sample.{lang}").read_text(encoding="utf-8").splitlines()
        for split, (start, end) in SPLITS.items():
            text = "".join(line + "\n" for line in lines[start:end])
            (raw / f"{split}.{lang}").write_text(text, encoding="utf-8")
    data = tmp_path / "data-bin"
    run_script(
        "prepare-en-iu.sh", "--train", str(raw / "train"), "--valid", str(raw / "valid"),
        "--test", str(raw / "test"), "--vocab-size", "600", "--out", str(data),
    )  # fmt: skip
    checkpoints = tmp_path / "checkpoints"
    run_tool([venv_tool("fairseq-train"), *tiny_train_args(data, checkpoints, 30)], cwd=tmp_path)
    checkpoint = checkpoints / "checkpoint_last.pt"
    run_script(
        "evaluate.sh", str(data), str(checkpoint), str(raw / "test.iu"), str(tmp_path / "eval"),
        "--beam", "5", "--batch-size", "1", "--", "--cpu", "--max-len-b", "40",
    )  # fmt: skip

    python, env = python_stand_in()
    result = subprocess.run(
        [python, "-m", "fairseq_struct.inference.translate", "--path", str(checkpoint), "--input",
         str(raw / "test.en"), "--cpu", "--beam", "5", "--batch-size", "1", "--max-len-b", "40"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    translated = result.stdout.splitlines()
    evaluated = (tmp_path / "eval" / "hyp.txt").read_text(encoding="utf-8").splitlines()
    assert len(translated) == 12 and translated == evaluated
    text = "".join(translated)
    assert MORPHEME_BOUNDARY not in text
    assert any("\u1400" <= char <= "\u167f" for char in text)  # Canadian syllabics
