"""translation_morph: fairseq's translation task that scores words, not pieces (design.md §2.4)."""

import re

import pytest
from conftest import REPO_ROOT, USER_DIR, run_tool, tiny_train_args, venv_tool

from fairseq_struct.pieces.markers import MORPHEME_BOUNDARY, WORD_START
from fairseq_struct.tasks.translation_morph import (
    PiecesToText,
    TranslationMorphConfig,
    TranslationMorphTask,
)


def test_pieces_are_joined_and_boundary_marks_removed():
    pieces = (
        f"{WORD_START}Kitab {MORPHEME_BOUNDARY} ım {MORPHEME_BOUNDARY} ı {WORD_START}oku du m ."
    )
    assert PiecesToText().decode(pieces) == "Kitabımı okudum."
    assert PiecesToText().decode(f"{WORD_START}gör eme dik") == "göremedik"


def test_encoding_raw_text_asks_for_the_sentencepiece_model():
    with pytest.raises(ValueError, match="--sentencepiece-model"):
        PiecesToText().encode("I read the book.")


def _reduced(task, logging_outputs) -> dict:
    from fairseq.criterions.cross_entropy import CrossEntropyCriterion
    from fairseq.logging import metrics

    with metrics.aggregate(new_root=True) as aggregated:
        task.reduce_metrics(logging_outputs, CrossEntropyCriterion(task, sentence_avg=False))
        return dict(aggregated.get_smoothed_values())


def _validation_output(counts, totals, sys_len, ref_len) -> dict:
    output = {"loss": 2.0, "nll_loss": 2.0, "ntokens": 4, "nsentences": 2, "sample_size": 4}
    for order, (count, total) in enumerate(zip(counts, totals)):
        output[f"_bleu_counts_{order}"] = count
        output[f"_bleu_totals_{order}"] = total
    return dict(output, _bleu_sys_len=sys_len, _bleu_ref_len=ref_len)


def test_a_validation_of_empty_hypotheses_has_bleu_zero_and_training_has_none():
    from fairseq.data import Dictionary
    from sacrebleu.metrics import BLEU

    dictionary = Dictionary()
    task = TranslationMorphTask(TranslationMorphConfig(eval_bleu=True), dictionary, dictionary)
    # An early model that ends every sentence at once: fairseq logged no "bleu", and
    # --best-checkpoint-metric bleu stopped training with KeyError.
    empty = _validation_output([0] * 4, [0] * 4, sys_len=0, ref_len=12)
    assert _reduced(task, [empty, empty])["bleu"] == 0.0
    # Training outputs carry no n-gram counts: no BLEU is made up for them.
    training = {"loss": 2.0, "ntokens": 4, "nsentences": 2, "sample_size": 4}
    assert "bleu" not in _reduced(task, [training])
    # Hypotheses with words: fairseq's own BLEU, unchanged.
    counts, totals = [5, 3, 2, 1], [6, 5, 4, 3]
    expected = BLEU.compute_bleu(counts, totals, 6, 7, smooth_method="exp").score
    values = _reduced(task, [_validation_output(counts, totals, sys_len=6, ref_len=7)])
    assert values["bleu"] == pytest.approx(round(expected, 2))


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
