"""Pieces per word count a "▁" piece and the pieces after it; morphemes per word count the
parts between "￭" marks; punctuation-only tokens are not words unless asked."""

import json

import pytest

from fairseq_struct.eval.corpus_stats import (
    file_stats,
    main,
    morphemes_per_word,
    morphological_density,
    pieces_per_word,
    segmentation_stats,
)

SEGMENTED = [
    "Gör￭eme￭dik￭ler￭imiz￭den biri geldi .",
    "İstanbul￭'da ev￭ler çok büyük￭tü.",
    "-- ?",
]
ENCODED = [
    "▁Gör ￭ eme ￭ dik ler imiz den ▁biri ▁gel di ▁.",
    "▁ İstanbul 'da ▁ev ler ▁çok",
]


def test_morphemes_are_the_parts_between_boundary_marks():
    assert morphemes_per_word(SEGMENTED[0]) == [6, 1, 1]
    assert morphemes_per_word(SEGMENTED[0], count_punctuation=True) == [6, 1, 1, 1]
    # "büyük￭tü." keeps its full stop: punctuation attached to a word is part of it
    assert morphemes_per_word(SEGMENTED[1]) == [2, 2, 1, 2]
    assert morphemes_per_word(SEGMENTED[2]) == []


def test_a_word_is_a_word_start_piece_and_the_pieces_after_it():
    # kept boundary marks are not pieces; "▁" alone starts a word of two pieces
    assert pieces_per_word(ENCODED[0]) == [6, 1, 2]
    assert pieces_per_word(ENCODED[0], count_punctuation=True) == [6, 1, 2, 1]
    assert pieces_per_word(ENCODED[1]) == [3, 2, 1]


def test_morphological_density_is_morphemes_per_word():
    assert morphological_density(SEGMENTED[0]) == pytest.approx(8 / 3)
    assert morphological_density(SEGMENTED[1]) == 7 / 4
    assert morphological_density(SEGMENTED[2]) is None


def test_statistics_of_a_small_corpus():
    stats = segmentation_stats(morphemes_per_word(line) for line in SEGMENTED)
    # per-word counts 6 1 1 | 2 2 1 2 | (none)
    assert stats.lines == 3
    assert stats.words == 7
    assert stats.units == 15
    assert stats.mean == 15 / 7
    assert stats.median == 2.0
    assert stats.share_multi_unit == 4 / 7
    assert stats.histogram == {1: 3, 2: 3, 6: 1}


def test_an_even_number_of_words_has_the_middle_mean_as_median():
    assert segmentation_stats([[1, 1, 2, 3]]).median == 1.5


def test_a_file_without_words_is_rejected_with_its_name(tmp_path):
    path = tmp_path / "punct.seg.tr"
    path.write_text("-- ?\n.\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"punct\.seg\.tr: no words"):
        file_stats(str(path), "morphemes")


def test_command_line_prints_a_table_and_json(tmp_path, capsys):
    segmented = tmp_path / "train.seg.tr"
    encoded = tmp_path / "train.sp.tr"
    segmented.write_text("".join(line + "\n" for line in SEGMENTED), encoding="utf-8")
    encoded.write_text("".join(line + "\n" for line in ENCODED), encoding="utf-8")
    out = tmp_path / "stats.json"

    main(["--pieces", str(encoded), "--segmented", str(segmented), "--json", str(out)])

    printed = capsys.readouterr().out.splitlines()
    rows = json.loads(out.read_text(encoding="utf-8"))
    assert json.loads(printed[-1]) == rows
    assert [(row["file"], row["unit"]) for row in rows] == [
        (str(encoded), "pieces"),
        (str(segmented), "morphemes"),
    ]
    assert rows[0]["stats"] == {
        "lines": 2,
        "words": 6,
        "units": 15,
        "mean": 2.5,
        "median": 2.0,
        "share_multi_unit": 4 / 6,
        "histogram": {"1": 2, "2": 2, "3": 1, "6": 1},
    }
    assert printed[2] == f"| {encoded} | pieces | 2 | 6 | 2.500 | 2 | 0.667 |"
    assert printed[3] == f"| {segmented} | morphemes | 3 | 7 | 2.143 | 2 | 0.571 |"
    assert printed[5] == f"{segmented} (morphemes/word: words) 1:3 2:3 6:1"
