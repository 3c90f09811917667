"""masked_lm.prepare streams: chunks, workers, the round-trip check, the report, --spm-model."""

import json

import pytest

from fairseq_struct.corpus_io import DocumentsReport, iter_documents
from fairseq_struct.masked_lm.prepare import main
from fairseq_struct.morph.sentencepiece_model import SentencePieceModel
from fairseq_struct.pieces.markers import pieces_to_text

DOCUMENTS = [
    ["Evlerde kitap var.", "Kitabı okudum."],
    ["Gördüm onu.", "Evler büyük.", "Okula gittik."],
    ["Kitaplar evlerde.", "Yeni kelime geldi."],
]


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _corpus(tmp_path, copies=20):
    """Numbered sentences in documents: train with `copies` copies of DOCUMENTS, valid with
    one, each break one or more empty (or whitespace) lines."""
    train = []
    for copy in range(copies):
        for document in DOCUMENTS:
            train += [f"{copy}: {sentence}" for sentence in document] + ["", " "]
    valid = [line for document in DOCUMENTS for line in document + [""]]
    return _write(tmp_path / "train.txt", train), _write(tmp_path / "valid.txt", valid)


def _run(train, valid, out, *options):
    return main(["--train", str(train), "--valid", str(valid), "--out-dir", str(out),
                 "--vocab-size", "80", *options])  # fmt: skip


def _report(out):
    return json.loads((out / "prepare_report.json").read_text(encoding="utf-8"))


def test_documents_are_read_as_a_stream(tmp_path):
    """The reader yields as it reads: lines before invalid UTF-8 come out before the error, with
    one break between documents and none at the edges."""
    path = _write(tmp_path / "valid.txt", ["", "  a  b ", "", "\t", "c", ""])
    with open(path, "ab") as file:
        file.write(b"\xff\n")
    report = DocumentsReport("valid", str(path))
    lines = iter_documents(path, report, drop_bad_lines=False)
    assert [next(lines) for _ in range(3)] == ["a b", "", "c"]
    with pytest.raises(ValueError, match=f"{path}:7: invalid UTF-8"):
        next(lines)

    _write(path, ["", "a", "", "", "b", "c", "", ""])
    report = DocumentsReport("valid", str(path))
    assert list(iter_documents(path, report, drop_bad_lines=False)) == ["a", "", "b", "c"]
    assert (report.lines_read, report.sentences_kept, report.documents) == (8, 3, 2)


@pytest.mark.parametrize("units", ["pieces", "words"])
def test_chunks_and_workers_write_what_one_chunk_in_one_process_writes(tmp_path, units):
    """Chunks of 7 lines (breaks fall at chunk edges too) over two processes: the same output,
    the pieces still spell each normalised line, and the report tells the run's figures."""
    train, valid = _corpus(tmp_path)
    one, many = tmp_path / "one", tmp_path / "many"
    assert _run(train, valid, one, "--units", units) == 0
    assert _run(train, valid, many, "--units", units, "--chunk-lines", "7", "--workers", "2",
                "--spm-threads", "1") == 0  # fmt: skip
    names = ["train.txt", "valid.txt", "spm.model" if units == "pieces" else "dict.txt"]
    for name in names:
        assert (many / name).read_bytes() == (one / name).read_bytes(), name

    report = _report(many)
    stage = "encoding" if units == "pieces" else "tokenization"
    lines = {"train": 20 * 10 - 1, "valid": 9}  # 7 sentences and 3 breaks per copy
    assert report[stage] == {"chunks": 29 + 2, "chunks_reused": 0}
    assert (report["chunk_lines"], report["workers"]) == (7, 2)
    expected = {"read", "sentencepiece", "encode"} if units == "pieces" else {"read", "tokenize"}
    assert set(report["stage_seconds"]) == expected
    for split, count in lines.items():
        assert len((many / f"{split}.txt").read_text(encoding="utf-8").splitlines()) == count
    assert not (many / ".prepare-work").exists()
    if units == "pieces":
        encoded = (many / "valid.txt").read_text(encoding="utf-8").splitlines()
        assert [pieces_to_text(line) for line in encoded] == valid.read_text().splitlines()[:-1]


def test_sentencepiece_trains_on_a_seeded_sample_with_as_many_threads_as_workers(tmp_path):
    train, valid = _corpus(tmp_path)
    runs = {"all": [], "sample": ["--spm-sample", "50"], "workers": ["--workers", "2"]}
    for name, options in runs.items():
        assert _run(train, valid, tmp_path / name, *options) == 0
    every_line, sampled, workers = (_report(tmp_path / name)["sentencepiece"] for name in runs)
    assert (every_line["training_lines"], every_line["training_sample"]) == (140, 140)
    assert (sampled["training_lines"], sampled["training_sample"]) == (140, 50)
    assert (every_line["training_threads"], workers["training_threads"]) == (1, 2)
    models = [(tmp_path / name / "spm.model").read_bytes() for name in runs]
    assert models[0] != models[1]


def test_pieces_that_do_not_spell_the_line_stop_the_run_with_file_and_line(tmp_path, monkeypatch):
    """A SentencePiece that loses a piece of valid's third line (in its second chunk of two
    lines) is caught, and the error names the output file and line."""
    train, valid = _corpus(tmp_path)
    encode_lines = SentencePieceModel.encode_lines

    def losing_a_piece(model, lines, num_threads=1):
        encoded = encode_lines(model, lines, num_threads)
        return [pieces[:-1] if line == "Gördüm onu." else pieces for line, pieces in zip(lines, encoded)]  # fmt: skip

    monkeypatch.setattr(SentencePieceModel, "encode_lines", losing_a_piece)
    out = tmp_path / "out"
    with pytest.raises(RuntimeError, match=f"{out / 'valid.txt'}:4: the pieces do not spell"):
        _run(train, valid, out, "--chunk-lines", "2")


def test_pieces_of_an_existing_model_are_those_of_the_run_that_trained_it(tmp_path):
    """--spm-model: the model of a first run encodes the same text into the same pieces, and is
    copied into the new output directory."""
    train, valid = _corpus(tmp_path)
    first, second = tmp_path / "first", tmp_path / "second"
    assert _run(train, valid, first, "--mode", "bpe") == 0
    other_train = _write(tmp_path / "other.txt", ["Başka bir metin.", "Bambaşka."])
    assert _run(other_train, valid, second, "--spm-model", str(first / "spm.model")) == 0
    for name in ("valid.txt", "spm.model"):
        assert (second / name).read_bytes() == (first / name).read_bytes(), name
    report = _report(second)["sentencepiece"]
    assert report["copied_from"] == str(first / "spm.model") and "training_lines" not in report


def test_a_second_run_reuses_the_model_of_the_same_text_and_options(tmp_path):
    """As in the translation preparation: a restarted run does not train SentencePiece again
    (the report of the run that trained it records its fingerprint); other options do."""
    train, valid = _corpus(tmp_path)
    out = tmp_path / "out"
    assert _run(train, valid, out) == 0
    first = _report(out)["sentencepiece"]
    assert first["model_reused"] is False
    model = (out / "spm.model").read_bytes()
    assert _run(train, valid, out) == 0
    second = _report(out)["sentencepiece"]
    assert second["model_reused"] is True
    assert second["training_fingerprint"] == first["training_fingerprint"]
    assert (out / "spm.model").read_bytes() == model
    assert _run(train, valid, out, "--seed", "2") == 0
    assert _report(out)["sentencepiece"]["model_reused"] is False
