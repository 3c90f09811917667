"""Moses clean-corpus-n semantics, the removal report and atomic output."""

import json
import logging
from pathlib import Path

import pytest

from fairseq_struct.corpora.clean_corpus import clean_parallel, main, removal_reason
from fairseq_struct.corpus_io import CorpusError

PAIRS = [
    ("Hello world .", "Merhaba dünya ."),  # 1 kept
    ("", "Boş değil"),  # 2 empty side
    ("one two three four five", "bir"),  # 3 kept: ratio 5 <= 9
    ("a b c d e f g h i j", "x"),  # 4 length ratio 10 > 9
    ("too long " * 41, "çok uzun"),  # 5 too long: 82 tokens
    ("Hello world .", "Merhaba dünya ."),  # 6 duplicate of 1
    ("  spaced\tout  ", " aralıklı\u00a0 "),  # 7 kept, whitespace normalised
    ("mark \u2581 inside", "işaret"),  # 8 reserved character
]


def write_pairs(tmp_path: Path, pairs, name: str = "corpus") -> tuple:
    source, target = tmp_path / f"{name}.en", tmp_path / f"{name}.tr"
    source.write_text("".join(s + "\n" for s, _ in pairs), encoding="utf-8")
    target.write_text("".join(t + "\n" for _, t in pairs), encoding="utf-8")
    return source, target


def test_pairs_are_removed_for_the_first_moses_reason_that_applies():
    assert removal_reason("a b", "c", 1, 80, 9) is None
    assert removal_reason("", "c", 1, 80, 9) == "empty side"
    assert removal_reason("a b c", "c", 2, 80, 9) == "too short"
    assert removal_reason("a b c", "c d", 1, 2, 9) == "too long"
    assert removal_reason("a " * 9 + "b", "c", 1, 80, 9) == "length ratio"
    assert removal_reason("a " * 8 + "b", "c", 1, 80, 9) is None  # ratio exactly 9 is kept
    assert removal_reason("a \ufffd b", "c", 1, 80, 9) is None
    assert removal_reason("a", "b\uffedc", 1, 80, 9) == "reserved character"


def test_report_counts_each_reason_and_lists_removed_line_numbers(tmp_path: Path):
    source, target = write_pairs(tmp_path, PAIRS)
    report = clean_parallel(
        source, target, tmp_path / "out.en", tmp_path / "out.tr", max_tokens=80, dedup=True
    )
    assert report["pairs_read"] == 8 and report["pairs_kept"] == 3
    assert report["removed"] == {
        "reserved character": 1,
        "empty side": 1,
        "too long": 1,
        "length ratio": 1,
        "duplicate pair": 1,
    }
    assert report["first_removed_lines"] == {
        "reserved character": [8],
        "empty side": [2],
        "too long": [5],
        "length ratio": [4],
        "duplicate pair": [6],
    }
    assert (tmp_path / "out.en").read_text().splitlines() == [
        "Hello world .",
        "one two three four five",
        "spaced out",
    ]
    assert (tmp_path / "out.tr").read_text().splitlines() == ["Merhaba dünya .", "bir", "aralıklı"]


def test_duplicates_are_kept_unless_asked_for(tmp_path: Path):
    source, target = write_pairs(tmp_path, PAIRS)
    report = clean_parallel(source, target, tmp_path / "out.en", tmp_path / "out.tr")
    assert "duplicate pair" not in report["removed"] and report["pairs_kept"] == 4


def test_invalid_utf8_pair_is_removed_not_fatal(tmp_path: Path):
    source, target = write_pairs(tmp_path, [("good", "iyi"), ("bad", "kötü")])
    target.write_bytes(b"iyi\nk\xf6t\xfc\n")  # Latin-1 on line 2
    report = clean_parallel(source, target, tmp_path / "out.en", tmp_path / "out.tr")
    assert report["removed"] == {"invalid UTF-8": 1}
    assert report["first_removed_lines"] == {"invalid UTF-8": [2]}


def test_misaligned_files_name_the_longer_file_and_write_nothing(tmp_path: Path):
    source, target = write_pairs(tmp_path, [("a", "b"), ("c", "d")])
    target.write_text("b\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"corpus\.en:2: .*corpus\.tr ends after 1 lines"):
        clean_parallel(source, target, tmp_path / "out.en", tmp_path / "out.tr")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.en", "corpus.tr"]


def test_cli_writes_outputs_named_by_language_and_a_json_report(tmp_path: Path, capsys):
    source, target = write_pairs(tmp_path, PAIRS)
    prefix = tmp_path / "clean"
    argv = ["--src", str(source), "--tgt", str(target), "--out-prefix", str(prefix)]
    assert main(argv + ["--min", "1", "--max", "3", "--ratio", "9"]) == 0
    report = json.loads(Path(f"{prefix}.report.json").read_text())
    assert report["settings"] == {"min": 1, "max": 3, "ratio": 9.0, "dedup": False}
    assert report["removed"]["too long"] == 3  # lines 3, 4 and 5
    assert Path(f"{prefix}.en").read_text().splitlines() == ["Hello world ."] * 2 + ["spaced out"]
    assert "kept 3 of 8 pairs" in capsys.readouterr().out


def test_progress_is_reported_in_pairs_with_the_total(tmp_path: Path, caplog):
    caplog.set_level(logging.INFO, logger="fairseq_struct.progress")
    source, target = write_pairs(tmp_path, PAIRS)
    clean_parallel(source, target, tmp_path / "out.en", tmp_path / "out.tr")
    assert [m for m in caplog.messages if m.startswith("cleaning: 8/8 pairs, ")], caplog.messages
