"""prepare → scripts/finetune.sh (stock fairseq-train from a pretrained checkpoint) → predict.

A small BERT2D with relative positions is pretrained on demo-grammar Turkish (conftest), then
fine-tuned on NER data whose tags follow a rule the encoder can learn (people nouns are PER
entities), and its predictions are written back into the CoNLL file and scored.
"""

import json
from pathlib import Path

import pytest
import torch
from conftest import assert_same_weights, run_script, run_tool, venv_tool
from seqeval.metrics import f1_score
from seqeval.scheme import IOB2

import fairseq_struct.plugin  # noqa: F401  (allow-lists the classes fairseq checkpoints hold)
from fairseq_struct.downstream.encoder_options import encoder_arguments, model_config

PEOPLE = (
    "çocuk",
    "öğretmen",
    "doktor",
    "öğrenci",
    "arkadaş",
    "komşu",
    "misafir",
    "hemşire",
    "şoför",
    "kadın",
    "adam",
    "kız",
    "polis",
    "anne",
    "baba",
)


def _tag(word: str) -> str:
    return "B-PER" if word.lower().startswith(PEOPLE) else "O"


def _write_conll(path: Path, sentences) -> None:
    blocks = ["\n".join(f"{w}\t{_tag(w)}" for w in sentence) for sentence in sentences]
    path.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")


def predict(python: str, checkpoint: Path, out: Path, work: Path) -> None:
    """`predict CHECKPOINT` on the validation file WORK/valid.conll, into OUT."""
    run_tool(
        [
            python, "-m", "fairseq_struct.downstream.predict", str(checkpoint),
            "--input", str(work / "valid.conll"), "--out-dir", str(out),
        ],
        cwd=work,
    )  # fmt: skip


def test_fine_tuning_a_pretrained_encoder_learns_and_predicts_in_the_input_format(
    pieces_bpe, pretrained_bert2d, tmp_path
):
    from fairseq_struct.demo_data.synthetic_en_tr import generate_corpus

    sentences = [
        tr.replace(".", " .").replace("?", " ?").split() for _, tr in generate_corpus(460, 5)
    ]
    _write_conll(tmp_path / "train.conll", sentences[:400])
    _write_conll(tmp_path / "valid.conll", sentences[400:])
    python = venv_tool("python")
    run_tool(
        [
            python,
            "-m",
            "fairseq_struct.downstream.prepare",
            "ner",
            "--pretraining-data",
            str(pieces_bpe),
            "--train",
            str(tmp_path / "train.conll"),
            "--valid",
            str(tmp_path / "valid.conll"),
            "--max-positions",
            "48",
            "--out-dir",
            str(tmp_path / "data"),
        ],
        cwd=tmp_path,
    )
    result = run_script(
        "finetune.sh",
        "--data",
        str(tmp_path / "data"),
        "--pretrained",
        str(pretrained_bert2d),
        "--save-dir",
        str(tmp_path / "ckpt"),
        "--cpu",
        "--head",
        "lcrf_ner",
        "--entity-fix",
        "--epochs",
        "3",
        "--lr",
        "1e-3",
        cwd=tmp_path,
        timeout=900,
    )
    assert "Loaded checkpoint " + str(pretrained_bert2d) in result.stderr + result.stdout
    predict(python, tmp_path / "ckpt" / "checkpoint_best.pt", tmp_path / "out", tmp_path)

    original = (tmp_path / "valid.conll").read_text(encoding="utf-8").splitlines()
    predicted = (tmp_path / "out" / "predictions.conll").read_text(encoding="utf-8").splitlines()
    assert len(predicted) == len(original)
    gold_tags, predicted_tags, sentence_gold, sentence_predicted = [], [], [], []
    for before, after in zip(original, predicted):
        if not before:
            assert after == ""
            gold_tags.append(sentence_gold)
            predicted_tags.append(sentence_predicted)
            sentence_gold, sentence_predicted = [], []
            continue
        assert after.startswith(before + "\t")
        sentence_gold.append(before.split("\t")[1])
        sentence_predicted.append(after.split("\t")[2])
    gold_tags.append(sentence_gold)
    predicted_tags.append(sentence_predicted)
    scores = json.loads((tmp_path / "out" / "scores.json").read_text())
    assert scores["f1"] == pytest.approx(100 * f1_score(gold_tags, predicted_tags), abs=0.01)
    strict = 100 * f1_score(gold_tags, predicted_tags, mode="strict", scheme=IOB2)
    assert scores["f1_strict_iob2"] == pytest.approx(strict, abs=0.01)
    assert scores["f1"] > 80  # the rule is learnt from 400 sentences in 3 epochs

    # Beside checkpoint_best.pt, the script writes model_best.pt: the same checkpoint without
    # Adam's state (about a third of it), which predicts the same, score for score.
    full = torch.load(tmp_path / "ckpt" / "checkpoint_best.pt")
    model_only = torch.load(tmp_path / "ckpt" / "model_best.pt")
    assert sorted(model_only) == sorted(set(full) - {"last_optimizer_state"})
    assert_same_weights(model_only["model"], full["model"])
    sizes = [
        (tmp_path / "ckpt" / name).stat().st_size
        for name in ("model_best.pt", "checkpoint_best.pt")
    ]
    assert sizes[0] < sizes[1] / 2
    predict(python, tmp_path / "ckpt" / "model_best.pt", tmp_path / "out-model-only", tmp_path)
    from_model_only = (tmp_path / "out-model-only" / "predictions.conll").read_text("utf-8")
    assert from_model_only.splitlines() == predicted
    scores_model_only = json.loads((tmp_path / "out-model-only" / "scores.json").read_text())
    assert {**scores_model_only, "checkpoint": None} == {**scores, "checkpoint": None}

    # The fine-tuned checkpoint is the pretrained architecture with its structure options.
    from fairseq_struct.fixes.checkpoint_safety import load_checkpoint

    pretrained = encoder_arguments(model_config(load_checkpoint(str(pretrained_bert2d))))
    fine_tuned = encoder_arguments(
        model_config(load_checkpoint(str(tmp_path / "ckpt" / "checkpoint_best.pt")))
    )
    assert fine_tuned == pretrained
    assert pretrained[pretrained.index("--relative-positions") + 1] == "4"
