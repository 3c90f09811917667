"""masked_lm.prepare: raw text → pieces or words for fairseq-preprocess --only-source."""

import json
import subprocess

import pytest
from conftest import REPO_ROOT, script_environment

from fairseq_struct.masked_lm.prepare import main
from fairseq_struct.pieces.markers import pieces_to_text

TRAIN = ["Evlerde kitap var.", "Kitabı okudum.", "", "", "Gördüm onu.", "Evler büyük."]
VALID = ["Kitaplar evlerde.", "", "Yeni kelime geldi."]


def _write(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_words_dictionary_covers_unseen_valid_words(tmp_path):
    train, valid = _write(tmp_path / "train.txt", TRAIN), _write(tmp_path / "valid.txt", VALID)
    assert main(["--train", str(train), "--valid", str(valid), "--out-dir", str(tmp_path / "o"),
                 "--units", "words"]) == 0  # fmt: skip
    lines = (tmp_path / "o" / "train.txt").read_text(encoding="utf-8").splitlines()
    # Runs of empty lines collapse to one document break; Moses splits the final dot.
    assert lines == ["Evlerde kitap var .", "Kitabı okudum .", "", "Gördüm onu .", "Evler büyük ."]
    entries = [line.split(" ") for line in (tmp_path / "o" / "dict.txt").read_text().splitlines()]
    counts = {word: int(count) for word, count in entries}
    assert entries[0] == [".", "4"]  # most frequent first
    assert counts["Kitaplar"] == 0 and counts["kelime"] == 0  # valid-only words, count 0
    assert list(counts.values()) == sorted(counts.values(), reverse=True)
    report = json.loads((tmp_path / "o" / "prepare_report.json").read_text())
    assert report["splits"]["train"]["documents"] == 2


def test_pieces_round_trip_and_keep_documents(tmp_path):
    train, valid = _write(tmp_path / "train.txt", TRAIN * 20), _write(tmp_path / "v.txt", VALID)
    assert main(["--train", str(train), "--valid", str(valid), "--out-dir", str(tmp_path / "o"),
                 "--vocab-size", "60"]) == 0  # fmt: skip
    encoded = (tmp_path / "o" / "valid.txt").read_text(encoding="utf-8").splitlines()
    assert [pieces_to_text(line) for line in encoded] == VALID
    assert (tmp_path / "o" / "spm.model").exists()


def test_bad_valid_line_names_file_and_line(tmp_path, capsys):
    train = _write(tmp_path / "train.txt", TRAIN)
    valid = _write(tmp_path / "valid.txt", ["İyi.", f"bad {chr(0xFFED)} mark"])
    assert main(["--train", str(train), "--valid", str(valid), "--out-dir", str(tmp_path / "o"),
                 "--units", "words"]) == 1  # fmt: skip
    assert f"{valid}:2: contains the morpheme boundary mark U+FFED" in capsys.readouterr().err


def test_whitespace_is_normalised_and_a_line_of_spaces_separates_documents(tmp_path):
    train = _write(tmp_path / "train.txt", TRAIN + [" leading  space\t", "   ", "Yeni belge."])
    valid = _write(tmp_path / "valid.txt", VALID)
    assert main(["--train", str(train), "--valid", str(valid), "--out-dir", str(tmp_path / "o"),
                 "--units", "words"]) == 0  # fmt: skip
    report = json.loads((tmp_path / "o" / "prepare_report.json").read_text())["splits"]["train"]
    assert report["dropped"] == [] and report["whitespace_normalised"] == 2
    assert report["whitespace_examples"] == [f"{train}:7", f"{train}:8"]
    assert report["documents"] == 3  # the two of TRAIN, and one after the line of spaces
    lines = (tmp_path / "o" / "train.txt").read_text(encoding="utf-8").splitlines()
    assert lines[-3:] == ["leading space", "", "Yeni belge ."]


def test_missing_file_is_a_clear_error(tmp_path, capsys):
    assert main(["--train", str(tmp_path / "nope.txt"), "--valid", str(tmp_path / "v.txt"),
                 "--out-dir", str(tmp_path / "o")]) == 1  # fmt: skip
    assert "nope.txt" in capsys.readouterr().err


@pytest.mark.parametrize("problem", ["invalid UTF-8", "the morpheme boundary mark"])
def test_unreadable_or_reserved_text_is_refused_with_file_and_line(tmp_path, capsys, problem):
    train = tmp_path / "train.txt"
    if problem == "invalid UTF-8":
        train.write_bytes(b"ok\n\xff bad\n")
    else:
        _write(train, ["ok", "a\uffedb"])
    valid = _write(tmp_path / "valid.txt", VALID)
    assert main(["--train", str(train), "--valid", str(valid), "--out-dir", str(tmp_path / "o"),
                 "--units", "words"]) == 1  # fmt: skip
    error = capsys.readouterr().err
    assert f"{train}:2:" in error and problem in error


def test_script_passes_its_workers_to_prepare_and_fairseq_preprocess(tmp_path):
    train, valid = _write(tmp_path / "train.txt", TRAIN), _write(tmp_path / "valid.txt", VALID)
    out = tmp_path / "bin"
    result = subprocess.run(
        ["bash", REPO_ROOT / "scripts" / "prepare-mlm.sh", "--train", train, "--valid", valid,
         "--out", out, "--units", "words", "--workers", "2"],
        env=script_environment(), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads((out / "text" / "prepare_report.json").read_text())["workers"] == 2
    assert " workers=2," in (out / "preprocess.log").read_text()  # fairseq-preprocess's arguments
    assert (out / "train.bin").is_file()
