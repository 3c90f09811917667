"""translation_morph: fairseq's translation task that scores plain words, not pieces (SPEC 2.4)."""

import re

import pytest
from conftest import REPO_ROOT, USER_DIR, run_tool, tiny_train_args, venv_tool

from fairseq_struct.pieces.markers import MORPHEME_BOUNDARY, WORD_START
from fairseq_struct.tasks.translation_morph import PiecesToText


def test_pieces_are_joined_and_boundary_marks_removed():
    pieces = (
        f"{WORD_START}Kitab {MORPHEME_BOUNDARY} ım {MORPHEME_BOUNDARY} ı {WORD_START}oku du m ."
    )
    assert PiecesToText().decode(pieces) == "Kitabımı okudum."
    assert PiecesToText().decode(f"{WORD_START}gör eme dik") == "göremedik"


def test_encoding_raw_text_asks_for_the_sentencepiece_model():
    with pytest.raises(ValueError, match="--sentencepiece-model"):
        PiecesToText().encode("I read the book.")


def test_eval_bleu_during_training_and_generate_print_plain_words(tiny_translation_data, tmp_path):
    save_dir = tmp_path / "checkpoints"
    train = run_tool(
        [
            venv_tool("fairseq-train"),
            *tiny_train_args(tiny_translation_data, save_dir, max_update=3),
            "--eval-bleu",
            "--eval-bleu-args",
            '{"beam": 1, "max_len_b": 10}',
            "--best-checkpoint-metric",
            "bleu",
            "--maximize-best-checkpoint-metric",
        ],
        cwd=REPO_ROOT,
    )
    assert re.search(r"valid on 'valid' subset \| .*\| bleu [\d.]+", train.stdout + train.stderr)

    generate = run_tool(
        [
            venv_tool("fairseq-generate"),
            str(tiny_translation_data),
            "--user-dir",
            USER_DIR,
            "--task",
            "translation_morph",
            "--path",
            str(save_dir / "checkpoint_best.pt"),
            "--beam",
            "2",
            "--max-len-b",
            "10",
            "--cpu",
            "--gen-subset",
            "test",
            "--batch-size",
            "16",
        ],
        cwd=REPO_ROOT,
    )
    hypotheses = re.findall(r"^H-\d+\t\S+\t(.*)$", generate.stdout, flags=re.M)
    detokenized = re.findall(r"^D-\d+\t\S+\t(.*)$", generate.stdout, flags=re.M)
    assert len(hypotheses) == len(detokenized) == 40
    assert any(WORD_START in h for h in hypotheses)  # H- lines keep the pieces
    assert all(WORD_START not in d for d in detokenized)
    assert [PiecesToText().decode(h) for h in hypotheses] == detokenized
