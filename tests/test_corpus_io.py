"""corpus_io: every bad input names its file and line; train drops, valid/test stop."""

import json
import re
from dataclasses import asdict

import pytest

from fairseq_struct.corpus_io import (
    CorpusError,
    atomic_write_bytes,
    atomic_write_lines,
    read_lines,
    read_parallel,
)
from fairseq_struct.pieces.markers import MORPHEME_BOUNDARY, WORD_START


def write_pair(tmp_path, split, source_lines, target_lines, raw_target=None):
    source, target = tmp_path / f"{split}.en", tmp_path / f"{split}.tr"
    source.write_text("".join(line + "\n" for line in source_lines), encoding="utf-8")
    if raw_target is None:
        target.write_text("".join(line + "\n" for line in target_lines), encoding="utf-8")
    else:
        target.write_bytes(raw_target)
    return source, target


def test_good_pairs_are_read_unchanged(tmp_path):
    source, target = write_pair(tmp_path, "train", ["Hello there.", "Bye"], ["Merhaba.", "Güle"])
    split = read_parallel(source, target, "train", drop_bad_pairs=True)
    assert (split.source, split.target) == (["Hello there.", "Bye"], ["Merhaba.", "Güle"])
    assert (split.raw_source, split.raw_target) == (split.source, split.target)
    assert split.report.whitespace_normalised == 0


def test_different_line_counts_name_both_files_and_counts(tmp_path):
    source, target = write_pair(tmp_path, "train", ["a", "b", "c"], ["x", "y"])
    with pytest.raises(CorpusError) as error:
        read_parallel(source, target, "train", drop_bad_pairs=True)
    assert f"{source} has 3 lines but {target} has 2" in str(error.value)


def test_invalid_utf8_names_file_line_and_byte(tmp_path):
    raw = "birinci\nikinci\n".encode() + b"ab\xffcd\n"
    source, target = write_pair(tmp_path, "train", ["a", "b", "c"], None, raw_target=raw)
    where = re.escape(f"{target}:3:")
    with pytest.raises(CorpusError, match=f"^{where} invalid UTF-8 at byte 2 of the line"):
        read_parallel(source, target, "train", drop_bad_pairs=True)


@pytest.mark.parametrize("split, drop", [("train", True), ("test", False)])
@pytest.mark.parametrize("mark", [MORPHEME_BOUNDARY, WORD_START])
def test_reserved_marks_in_input_are_an_error_in_every_split(tmp_path, split, drop, mark):
    source, target = write_pair(tmp_path, split, ["a", "b"], ["x", f"ev{mark}ler"])
    where = re.escape(f"{target}:2:")
    with pytest.raises(CorpusError, match=f"^{where} contains .* at character 3"):
        read_parallel(source, target, split, drop_bad_pairs=drop)


def test_empty_train_line_drops_the_pair_and_lists_it(tmp_path):
    source, target = write_pair(tmp_path, "train", ["a", "", "c"], ["x", "y", ""])
    split = read_parallel(source, target, "train", drop_bad_pairs=True)
    assert (split.source, split.target) == (["a"], ["x"])
    assert split.report.dropped == [f"{source}:2: empty line", f"{target}:3: empty line"]
    assert split.report.dropped_by_reason == {"empty line": 2}
    assert (split.report.pairs_read, split.report.pairs_kept) == (3, 1)


@pytest.mark.parametrize("split", ["valid", "test"])
def test_empty_valid_or_test_line_is_an_error(tmp_path, split):
    source, target = write_pair(tmp_path, split, ["a", "b"], ["x", ""])
    where = re.escape(f"{target}:2:")
    with pytest.raises(CorpusError, match=f"^{where} empty line; {split} pairs are never"):
        read_parallel(source, target, split, drop_bad_pairs=False)


@pytest.mark.parametrize(
    "line, normalised",
    [
        ("tab\there", "tab here"),
        ("no-break\u00a0space", "no-break space"),
        ("carriage\rreturn", "carriage return"),
        (" leading", "leading"),
        ("trailing ", "trailing"),
        ("double  space", "double space"),
        ("\t mixed \u00a0 run\t", "mixed run"),
    ],
)
@pytest.mark.parametrize("split", ["train", "test"])
def test_whitespace_is_normalised_in_every_split_and_the_raw_line_kept(
    tmp_path, split, line, normalised
):
    source, target = write_pair(tmp_path, split, ["good", line], ["iyi", "x"])
    read = read_parallel(source, target, split, drop_bad_pairs=split == "train")
    assert read.source == ["good", normalised] and read.raw_source == ["good", line]
    assert read.report.whitespace_normalised == 1
    assert read.report.whitespace_examples == [f"{source}:2"]
    assert read.report.dropped == []


def test_a_line_of_whitespace_is_an_empty_line(tmp_path):
    source, target = write_pair(tmp_path, "train", ["good", " \t "], ["iyi", "x"])
    split = read_parallel(source, target, "train", drop_bad_pairs=True)
    assert split.source == ["good"] and split.report.dropped_by_reason == {"empty line": 1}
    source, target = write_pair(tmp_path, "test", ["good", " \t "], ["iyi", "x"])
    with pytest.raises(CorpusError, match=f"^{re.escape(str(source))}:2: empty line"):
        read_parallel(source, target, "test", drop_bad_pairs=False)


def test_crlf_line_endings_are_read_as_lines(tmp_path):
    path = tmp_path / "crlf.tr"
    path.write_bytes("bir\r\niki\r\n".encode())
    assert read_lines(path) == ["bir", "iki"]


def test_last_line_without_newline_is_read(tmp_path):
    path = tmp_path / "no-newline.tr"
    path.write_bytes("bir\niki".encode())
    assert read_lines(path) == ["bir", "iki"]


def test_very_long_words_are_kept_and_counted(tmp_path):
    long_word = "çok" * 200
    source, target = write_pair(tmp_path, "test", ["a", "b"], ["kısa", f"x {long_word} y"])
    split = read_parallel(source, target, "test", drop_bad_pairs=False)
    assert split.target[1] == f"x {long_word} y"
    assert split.report.long_words == 1
    assert split.report.long_word_examples == [f"{target}:2: 600 characters"]


def test_report_can_be_written_as_json(tmp_path):
    source, target = write_pair(tmp_path, "train", ["a", ""], ["x", "y"])
    report = read_parallel(source, target, "train", drop_bad_pairs=True).report
    assert json.loads(json.dumps(asdict(report)))["dropped"] == [f"{source}:2: empty line"]


def test_no_usable_pair_is_an_error(tmp_path):
    source, target = write_pair(tmp_path, "train", [""], ["x"])
    with pytest.raises(CorpusError, match="no usable pair"):
        read_parallel(source, target, "train", drop_bad_pairs=True)


def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path):
    path = tmp_path / "out.txt"
    atomic_write_lines(path, ["old"])

    def failing_lines():
        yield "new"
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        atomic_write_lines(path, failing_lines())
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]


def test_atomic_write_leaves_no_temporary_file_when_the_replace_fails(tmp_path):
    (tmp_path / "taken").mkdir()  # a directory cannot be replaced by a file
    with pytest.raises(OSError):
        atomic_write_bytes(tmp_path / "taken", b"data")
    assert [p.name for p in tmp_path.iterdir()] == ["taken"]
