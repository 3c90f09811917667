"""fairseq's own `sentence_prediction` task and criterion fine-tune the project's encoders (the
docs/pretraining.md: "Both models are `RobertaModel` subclasses: ... `sentence_prediction` fine-tuning ...
work unchanged"): a masked-LM checkpoint of `bert2d` (pieces) and of `bert_elmo` (words) is
restored into stock `fairseq-train --task sentence_prediction --criterion sentence_prediction`
on data laid out as fairseq expects (`input0/`, `label/`, binarized with the pretraining
dictionary), and learns a sentence label that the text decides: whether a word carries the
suffix `x0` (60% of the held-out sentences do not, so a constant guess scores 60%).

The accuracy fairseq logs is checked against the saved checkpoint, evaluated here through the
classification head, on the same validation split.
"""

import re
from pathlib import Path

import pytest
import torch
from conftest import (
    REPO_ROOT,
    SMALL_CHARACTER_CNN,
    cpu_train_args,
    run_tool,
    tiny_mlm_train_args,
    venv_tool,
)

import fairseq_struct.plugin  # noqa: F401  (allow-lists the classes fairseq checkpoints hold)

HEAD = "sentence_classification_head"  # fairseq's --classification-head-name default
# bert_elmo (with the paper's 1,056 character filters) sat at the constant guess for ~5 epochs
# (its character CNN must find the suffix) before it learnt the label; bert2d, which sees `x0` as
# a piece of its own, needs one.
CASES = {
    "bert2d": ("pieces", ["--arch", "bert2d_tiny"], 3),
    "bert_elmo": (
        "words",
        ["--arch", "bert_elmo_tiny", "--tokens-are-words", *SMALL_CHARACTER_CNN],
        10,
    ),
}


def _labelled_split(tiny_mlm_data: dict, units: str, root: Path) -> Path:
    """Sentences of the pretraining text (so every word is in the pretraining dictionary)
    labelled by the suffix rule: 320 to train on, 80 held out."""
    pieces = (tiny_mlm_data["pieces"].parent / "train.txt").read_text("utf-8").splitlines()
    texts = (tiny_mlm_data[units].parent / "train.txt").read_text("utf-8").splitlines()
    pairs = [(text, "x0" in line.split()) for line, text in zip(pieces, texts) if line]
    raw = root / "raw"
    raw.mkdir()
    for split, part in (("train", pairs[:320]), ("valid", pairs[320:])):
        (raw / f"{split}.input0").write_text("".join(t + "\n" for t, _ in part), "utf-8")
        labels = "".join(("suffix" if has else "plain") + "\n" for _, has in part)
        (raw / f"{split}.label").write_text(labels, "utf-8")
    data = root / "data"
    for name, dictionary in (
        ("input0", ["--srcdict", str(tiny_mlm_data[units] / "dict.txt")]),
        ("label", []),
    ):
        run_tool(
            [
                venv_tool("fairseq-preprocess"),
                "--only-source",
                "--trainpref",
                raw / f"train.{name}",
                "--validpref",
                raw / f"valid.{name}",
                *dictionary,
                "--destdir",
                data / name,
                "--workers",
                "1",
            ],
            cwd=root,
        )
    return data


def _evaluate(checkpoint: Path, tokens_are_words: bool) -> tuple:
    """Accuracy (%) of the checkpoint's classification head on its validation split, the
    share (%) of the most frequent label there, and the largest difference between the encoder's
    features as fine-tuning computes them (fairseq's task passes tokens only) and with the word
    starts the pretraining task passes (`masked_lm_struct`: from the dictionary)."""
    from fairseq import checkpoint_utils

    from fairseq_struct.pieces.word_boundaries import word_start_lookup

    models, _, task = checkpoint_utils.load_model_ensemble_and_task([str(checkpoint)])
    model = models[0].eval()
    task.load_dataset("valid")
    dataset = task.dataset("valid")
    sample = dataset.collater([dataset[i] for i in range(len(dataset))])
    src_tokens = sample["net_input"]["src_tokens"]
    with torch.no_grad():
        logits, _ = model(**sample["net_input"], features_only=True, classification_head_name=HEAD)
        features, _ = model.encoder.extract_features(src_tokens)
        starts = word_start_lookup(task.source_dictionary, tokens_are_words)[src_tokens]
        as_pretrained, _ = model.encoder.extract_features(src_tokens, word_starts=starts)
    feature_difference = float((features - as_pretrained).abs().max())
    target = sample["target"].view(-1)
    correct = int(logits.argmax(-1).eq(target).sum())
    majority = int(torch.bincount(target).max())
    return 100 * correct / len(target), 100 * majority / len(target), feature_difference


@pytest.mark.parametrize("model", sorted(CASES))
def test_stock_sentence_prediction_fine_tunes_a_pretrained_encoder(model, tiny_mlm_data, tmp_path):
    units, arch, epochs = CASES[model]
    pretrained_dir = tmp_path / "pretrained"
    run_tool(
        [
            venv_tool("fairseq-train"),
            *tiny_mlm_train_args(tiny_mlm_data[units], pretrained_dir, 3, *arch),
        ],
        cwd=REPO_ROOT,
    )
    pretrained = pretrained_dir / "checkpoint_last.pt"
    data = _labelled_split(tiny_mlm_data, units, tmp_path)
    save_dir = tmp_path / "fine-tuned"
    result = run_tool(
        [
            venv_tool("fairseq-train"),
            str(data),
            "--user-dir",
            str(REPO_ROOT / "fairseq_struct"),
            "--task",
            "sentence_prediction",
            "--criterion",
            "sentence_prediction",
            "--num-classes",
            "2",
            "--init-token",
            "0",
            "--separator-token",
            "2",
            arch[0],
            arch[1],
            "--max-positions",
            "48",
            "--restore-file",
            str(pretrained),
            "--reset-optimizer",
            "--reset-dataloader",
            "--reset-meters",
            "--optimizer",
            "adam",
            "--lr",
            "0.001",
            "--batch-size",
            "16",
            "--max-epoch",
            str(epochs),
            *cpu_train_args(save_dir),
        ],
        cwd=REPO_ROOT,
    )
    log = result.stdout + result.stderr
    assert f"Loaded checkpoint {pretrained}" in log, log[-3000:]
    valid = re.findall(r"\| valid on 'valid' subset \|(.*)", log)
    assert len(valid) == epochs, log[-3000:]
    figures = [dict(re.findall(r"(\w+) ([\d.]+)", line)) for line in valid]
    first, last = figures[0], figures[-1]
    assert float(last["loss"]) < 0.5 * float(first["loss"]), (first, last)

    accuracy, majority, feature_difference = _evaluate(
        save_dir / "checkpoint_last.pt", tokens_are_words=units == "words"
    )
    # The encoder sees the words of a sentence as in pretraining (BERT2D's 2D positions).
    assert feature_difference == 0.0
    assert majority == 60.0
    assert accuracy >= 95.0, (accuracy, valid)
    # fairseq's logged accuracy (one decimal) is that of the checkpoint it saved.
    assert float(last["accuracy"]) == pytest.approx(accuracy, abs=0.05)

    state = torch.load(save_dir / "checkpoint_last.pt")
    assert state["cfg"]["model"].arch == arch[1]
    assert state["cfg"]["task"]["_name"] == "sentence_prediction"
    assert state["model"][f"classification_heads.{HEAD}.out_proj.weight"].shape[0] == 2
