"""Sentences are bucketed by morphemes per word of their segmented reference, and every system
is scored with sacreBLEU within each bucket (design.md §5.3)."""

import json
import math
from pathlib import Path

import pytest
import sacrebleu

from fairseq_struct.eval.density_buckets import (
    bucket_scores,
    format_table,
    main,
    quantile_edges,
    sentence_densities,
)

SEGMENTED = [
    "Ev büyük .",  # 1.0
    "Ev￭ler büyük .",  # 1.5
    "Gör￭eme￭dik￭ler￭imiz￭den biri geldi .",  # 8/3
    "Kitap￭lar￭ı masa￭ya .",  # 2.5
    "-- ?",  # no word
]
RAW = [line.replace("\uffed", "") for line in SEGMENTED]
BPE = ["Ev büyük .", "Ev büyük .", "Gördük biri geldi .", "Kitaplar masa .", "-- ?"]
MORPH = ["Ev büyük .", "Evler büyük .", "Göremediklerimizden biri geldi .", RAW[3], "-- ?"]


def write_lines(path: Path, lines: list) -> str:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def test_density_is_morphemes_per_word_without_punctuation():
    densities = sentence_densities(SEGMENTED, RAW, "test.seg.tr", "test.raw.tr")
    assert densities == [1.0, 1.5, pytest.approx(8 / 3), 2.5, None]


def test_a_segmented_line_that_is_not_the_raw_line_is_named():
    raw = RAW[:2] + ["Başka bir cümle ."] + RAW[3:]
    with pytest.raises(ValueError, match=r"test\.seg\.tr line 3: .* not line 3 of test\.raw\.tr"):
        sentence_densities(SEGMENTED, raw, "test.seg.tr", "test.raw.tr")
    with pytest.raises(ValueError, match=r"test\.seg\.tr has 5 lines but test\.raw\.tr has 4"):
        sentence_densities(SEGMENTED, RAW[:4], "test.seg.tr", "test.raw.tr")


def test_buckets_hold_their_sentences_and_sacrebleu_scores_of_them():
    densities = sentence_densities(SEGMENTED, RAW, "seg", "raw")
    report = bucket_scores(densities, RAW, [("bpe", BPE), ("morph", MORPH)], edges=[1.0, 2.0, 3.0])

    assert [bucket.label for bucket in report.buckets] == [
        "[1.00, 2.00)",
        "[2.00, 3.00)",
        "[3.00, inf)",
    ]
    assert [bucket.sentences for bucket in report.buckets] == [[0, 1], [2, 3], []]
    assert report.unbucketed == 1  # the punctuation-only line
    assert report.buckets[0].mean_density == 1.25
    assert report.buckets[1].mean_density == pytest.approx((8 / 3 + 2.5) / 2)
    high = report.buckets[1]
    assert high.scores["bpe"]["BLEU"] == sacrebleu.corpus_bleu(BPE[2:4], [RAW[2:4]]).score
    assert high.scores["morph"]["chrF"] == sacrebleu.corpus_chrf(MORPH[2:4], [RAW[2:4]]).score
    assert high.scores["morph"]["BLEU"] == pytest.approx(100.0)
    assert report.buckets[2].scores == {}
    assert report.overall["bpe"]["BLEU"] == sacrebleu.corpus_bleu(BPE, [RAW]).score
    assert list(report.signatures) == ["BLEU", "chrF2"]


def test_sentences_below_the_first_edge_belong_to_no_bucket():
    report = bucket_scores([1.0, 1.5, 2.0], RAW[:3], [("bpe", BPE[:3])], edges=[1.5, 2.0])
    assert [bucket.sentences for bucket in report.buckets] == [[1], [2]]
    assert report.unbucketed == 1
    assert report.buckets[1].high == math.inf


def test_edges_must_increase_and_systems_must_match_the_references():
    with pytest.raises(ValueError, match="strictly increasing"):
        bucket_scores([1.0], RAW[:1], [("bpe", BPE[:1])], edges=[2.0, 1.0])
    with pytest.raises(ValueError, match="bpe has 4 hypotheses but there are 5 references"):
        bucket_scores([1.0] * 5, RAW, [("bpe", BPE[:4])])


def test_quantile_edges_split_sentences_into_equal_buckets():
    densities = [1.0, 1.5, 2.0, 2.5, None, 3.0, 3.5]
    assert quantile_edges(densities, 3) == [1.0, pytest.approx(11 / 6), pytest.approx(8 / 3)]
    assert quantile_edges([1.0, 1.0, 1.0], 4) == [1.0]


def test_table_has_a_row_per_bucket_and_the_signatures():
    densities = sentence_densities(SEGMENTED, RAW, "seg", "raw")
    report = bucket_scores(densities, RAW, [("bpe", BPE), ("morph", MORPH)], edges=[1, 2, 3])
    lines = format_table(report)

    assert lines[0] == (
        "| density | sentences | mean density | bpe BLEU | bpe chrF | morph BLEU | morph chrF |"
    )
    assert lines[2].startswith("| [1.00, 2.00) | 2 | 1.250 | ")
    assert lines[4] == "| [3.00, inf) | 0 |  |  |  |  |  |"
    assert lines[5].startswith("| all | 5 |  | ")
    assert lines[6] == "1 sentences below the first edge or without words"
    assert lines[7].startswith("BLEU|nrefs:1|case:mixed|eff:no|tok:13a")
    assert lines[8].startswith("chrF2|nrefs:1|")


def test_command_line_writes_table_json_and_plot(tmp_path, capsys):
    seg = write_lines(tmp_path / "test.seg.tr", SEGMENTED)
    ref = write_lines(tmp_path / "test.raw.tr", RAW)
    bpe = write_lines(tmp_path / "bpe.txt", BPE)
    morph = write_lines(tmp_path / "morph.txt", MORPH)
    out = tmp_path / "out"

    main(
        ["--segmented-ref", seg, "--ref", ref, "--system", f"bpe={bpe}"]
        + ["--system", f"morph={morph}", "--out-dir", str(out), "--edges", "1,2,3"]
    )

    table = (out / "density_buckets.md").read_text(encoding="utf-8").splitlines()
    assert capsys.readouterr().out.splitlines() == table
    record = json.loads((out / "density_buckets.json").read_text(encoding="utf-8"))
    assert record["hypotheses"] == {"bpe": bpe, "morph": morph}
    assert record["edges"] == [1.0, 2.0, 3.0]
    assert [bucket["sentences"] for bucket in record["buckets"]] == [2, 2, 0]
    assert record["buckets"][2]["high"] is None
    assert record["buckets"][1]["scores"]["morph"]["BLEU"] == pytest.approx(100.0)
    assert (out / "density_buckets.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_command_line_names_a_hypothesis_file_of_the_wrong_length(tmp_path):
    seg = write_lines(tmp_path / "test.seg.tr", SEGMENTED)
    ref = write_lines(tmp_path / "test.raw.tr", RAW)
    short = write_lines(tmp_path / "short.txt", BPE[:3])
    out = str(tmp_path / "out")

    with pytest.raises(SystemExit, match=r"short\.txt \(bpe\) has 3 lines but .*raw\.tr has 5"):
        main(["--segmented-ref", seg, "--ref", ref, "--system", f"bpe={short}", "--out-dir", out])
    with pytest.raises(SystemExit, match="expected NAME=HYPOTHESIS_FILE"):
        main(["--segmented-ref", seg, "--ref", ref, "--system", short, "--out-dir", out])
    with pytest.raises(SystemExit, match="--edges '1,x': expected comma-separated numbers"):
        main(
            ["--segmented-ref", seg, "--ref", ref, "--system", f"b={ref}", "--out-dir", out]
            + ["--edges", "1,x"]
        )
