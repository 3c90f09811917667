"""Labelled words are cut into exactly the units of their pretraining run."""

import json

import pytest
from fairseq.data import Dictionary

from fairseq_struct.downstream.features import IGNORED_LABEL, CutCounts, token_windows
from fairseq_struct.morph.units import PretrainingUnits, UnitCutter, UnitError, unit_spans
from fairseq_struct.pieces.markers import WORD_START
from fairseq_struct.pieces.word_boundaries import word_start_lookup

SENTENCE = ["Öğretmenler", "okulda", "kitabı", "okumadılar", "."]


def pretraining_lines(run, count=50):
    return (run / "text" / "train.txt").read_text(encoding="utf-8").splitlines()[:count]


@pytest.mark.parametrize("run_name", ["pieces_bpe", "pieces_morph"])
def test_pieces_equal_the_pretraining_encoding_of_the_same_line(
    run_name, request, pretraining_text
):
    run = request.getfixturevalue(run_name)
    units = PretrainingUnits.from_data_dir(run)
    assert (units.units, units.mode) == ("pieces", run_name.split("_")[1])
    raw = (pretraining_text / "train.txt").read_text(encoding="utf-8").splitlines()[:50]
    cut = UnitCutter(units).cut([line.split() for line in raw])
    encoded = pretraining_lines(run)
    assert [" ".join(u for word in sentence for u in word) for sentence in cut] == encoded


def test_words_are_the_moses_tokens_of_the_pretraining_text(words, pretraining_text):
    units = PretrainingUnits.from_data_dir(words)
    assert units.tokens_are_words
    raw = (pretraining_text / "train.txt").read_text(encoding="utf-8").splitlines()[:50]
    cut = UnitCutter(units).cut([line.split() for line in raw])
    assert [" ".join(u for w in s for u in w) for s in cut] == pretraining_lines(words)
    assert UnitCutter(units).cut([["Adana'da"]]) == [[["Adana", "'", "da"]]]


@pytest.mark.parametrize("run_name", ["pieces_bpe", "pieces_morph", "words"])
def test_labels_land_on_the_unit_where_the_encoder_sees_a_word_start(run_name, request):
    run = request.getfixturevalue(run_name)
    units = PretrainingUnits.from_data_dir(run)
    dictionary = Dictionary.load(str(run / "dict.txt"))
    starts = word_start_lookup(dictionary, units.tokens_are_words)
    (cut,) = UnitCutter(units).cut([SENTENCE])
    assert all(word[0].startswith(WORD_START) or units.tokens_are_words for word in cut)
    labels = [f"L{i}" for i in range(len(SENTENCE))]
    (window,) = token_windows(0, cut, labels, dictionary, 128, CutCounts())
    labelled = [i for i, label in enumerate(window.labels) if label != IGNORED_LABEL]
    assert [window.labels[i] for i in labelled] == labels
    # Every labelled token begins a word for the encoder (2D positions, WWA, masking agree);
    # in bpe/morph mode only those do (unknown pieces aside, which are <unk> words of their own).
    flags = [bool(starts[token]) for token in window.tokens[1:-1]]
    assert all(flags[i - 1] for i in labelled)
    if not units.tokens_are_words:
        assert sum(flags) == len(SENTENCE)
    if run_name == "pieces_morph":
        assert len(cut[3]) > 1  # okumadılar: oku|ma|dı|lar, never one piece across a boundary


def test_unit_spans_give_each_unit_its_characters():
    assert unit_spans("Adana'da", ["▁Ada", "na", "'", "da"]) == [(0, 3), (3, 5), (5, 6), (6, 8)]
    assert unit_spans("x.", ["▁", "x", "."]) == [(0, 0), (0, 1), (1, 2)]
    with pytest.raises(UnitError, match="not found"):
        unit_spans("abc", ["▁ab", "x"])


def test_reserved_marks_and_whitespace_in_words_are_refused(pieces_bpe):
    cutter = UnitCutter(PretrainingUnits.from_data_dir(pieces_bpe))
    for word in ("a\u2581b", "a\uffedb", "a b", ""):
        with pytest.raises(UnitError):
            cutter.cut([[word]])


def test_a_directory_that_is_not_a_pretraining_run_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="prepare-mlm.sh"):
        PretrainingUnits.from_data_dir(tmp_path)
    (tmp_path / "text").mkdir()
    (tmp_path / "text" / "prepare_report.json").write_text(json.dumps({"units": "pieces"}))
    with pytest.raises(FileNotFoundError, match="dict.txt"):
        PretrainingUnits.from_data_dir(tmp_path)
