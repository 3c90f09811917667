"""Fetching the catalogue's data sets: downloads from a local HTTP server (no network), the
Hugging Face path through a local copy, conversions of fixtures written in each published
file's exact layout (tests/downstream_sets/fixtures: GermEval's trailing tabs, LER's CRLF,
TQuAD's string offsets, winvoker's quoted multi-line CSV rows), checksums and atomic output."""

import dataclasses
import functools
import hashlib
import http.server
import json
import threading
from pathlib import Path
from typing import Dict

import pytest
from fixture_sets import FIXTURE_SIZES, FIXTURES

from fairseq_struct.corpora.download import DownloadError
from fairseq_struct.downstream import readers
from fairseq_struct.downstream.readers import DownstreamDataError
from fairseq_struct.downstream_sets import cli
from fairseq_struct.downstream_sets.catalog import DATASETS, HubSource, SourceFile, UrlSource
from fairseq_struct.downstream_sets.fetching import REPORT_FILE, fetch
from fairseq_struct.downstream_sets.sources import SOURCES_DIR


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fixture_path(source_key: str, url: str) -> Path:
    """The fixture of a published file: its path below the source's folder in the URL."""
    matches = [p for p in (FIXTURES / source_key).rglob(url.rsplit("/", 1)[-1]) if p.is_file()]
    assert len(matches) == 1, url
    return matches[0]


def served(name: str, base_url: str, pin: bool = True):
    """Catalogue entry `name` with its files served from the fixtures and the fixtures' sizes;
    with `pin`, each file's sha256 pinned where the catalogue pins one."""
    dataset = DATASETS[name]
    source = dataset.source
    files = tuple(
        SourceFile(
            f"{base_url}/{source.key}/{file.filename}",
            file.filename,
            sha256(fixture_path(source.key, file.url)) if pin and file.sha256 else None,
        )
        for file in source.files
    )
    return dataclasses.replace(
        dataset,
        source=UrlSource(source.key, files, source.homepage),
        expected=FIXTURE_SIZES[name],
    )


class FixtureHandler(http.server.SimpleHTTPRequestHandler):
    """Serves /KEY/FILENAME from the fixtures; `pages` replaces a file's body (a web page)."""

    pages: Dict[str, bytes] = {}

    def do_GET(self) -> None:
        key, _, filename = self.path.lstrip("/").partition("/")
        if self.path in self.pages:
            body = self.pages[self.path]
        else:
            matches = list((FIXTURES / key).rglob(filename)) if filename else []
            if not matches:
                self.send_error(404)
                return
            body = matches[0].read_bytes()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def server():
    FixtureHandler.pages = {}
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FixtureHandler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def conll(path: Path):
    blocks = path.read_text(encoding="utf-8").split("\n\n")
    return [[tuple(line.split("\t")) for line in block.splitlines()] for block in blocks if block]


# ------------------------------------------------------------------------------ NER


def test_germeval_published_files_give_the_outer_chunks_with_the_trailing_tab_counted(
    server, tmp_path
):
    report = fetch(served("germeval2014", server), tmp_path)
    directory = tmp_path / "germeval2014"
    test = conll(directory / "test.conll")
    assert test[1] == [('"', "O"), ("Bagdad", "B-LOC"), ("\u0096", "O"), ("ruhig", "O"), ('"', "O")]
    assert test[0][2:] == [("Berliner", "B-ORGpart"), ("Universität", "I-ORGpart")]
    assert conll(directory / "train.conll")[1][3] == (
        "Her\u00adaus\u00adfor\u00adderun\u00adgen",
        "O",
    )
    assert conll(directory / "valid.conll")[1][0] == ("#", "O")  # a token, not a comment
    test_read = report["splits"]["test"]["read"]
    assert test_read["repaired"] == {"trailing tab removed": 1}
    assert test_read["skipped"] == {"comment line": 3}
    assert report["splits"]["test"]["entities"] == {"LOC": 1, "LOCderiv": 1, "ORGpart": 1}
    assert json.loads((directory / REPORT_FILE).read_text())["splits"] == report["splits"]


def test_ler_coarse_maps_the_19_fine_classes_and_fine_keeps_them(server, tmp_path):
    fetch(served("ler-cg", server), tmp_path)
    fetch(served("ler-fg", server), tmp_path)
    coarse = conll(tmp_path / "ler-cg" / "train.conll")
    fine = conll(tmp_path / "ler-fg" / "train.conll")
    assert [t for _, t in fine[1]][1:7] == ["B-GS", "I-GS", "I-GS", "I-GS", "I-GS", "I-GS"]
    assert [t for _, t in coarse[1]][1:7] == ["B-NRM", "I-NRM", "I-NRM", "I-NRM", "I-NRM", "I-NRM"]
    assert dict(coarse[1])["Müller"] == "B-PER" and dict(fine[1])["Müller"] == "B-RR"
    assert dict(coarse[0])["BGH"] == "B-ORG"  # GRT, a court
    assert {w: t for w, t in coarse[2] if t != "O"} == {
        "Siemens": "B-ORG",
        "AG": "I-ORG",
        "BVerwG": "B-RS",
        ",": "I-RS",
        "Urteil": "I-RS",
        "Palandt": "B-LIT",
        "Vertrag": "B-REG",
    }
    # CRLF line ends are gone, the words are as published.
    assert "\r" not in (tmp_path / "ler-cg" / "test.conll").read_text(encoding="utf-8")
    assert conll(tmp_path / "ler-cg" / "test.conll")[0][-1] == ("\u25cf", "O")


def test_ler_coarse_refuses_a_class_it_cannot_map_naming_the_line(server, tmp_path):
    FixtureHandler.pages["/legal-entity-recognition/ler_dev.conll"] = (
        "Das O\r\nXYZ B-ABC\r\n\r\nDer O\r\n\r\n".encode()
    )
    with pytest.raises(DownstreamDataError) as error:
        fetch(served("ler-cg", server, pin=False), tmp_path)
    source = tmp_path / SOURCES_DIR / "legal-entity-recognition" / "ler_dev.conll"
    assert str(error.value).startswith(f"{source}:2: tag 'B-ABC' has no coarse class")
    assert not (tmp_path / "ler-cg").exists()


@pytest.mark.parametrize(
    "name, split, sentence, expected",
    [
        ("arendt", "train", 1, [("Vereinten", "B-organization"), ("Nationen", "I-organization")]),
        ("sturm", "train", 1, [("3.", "B-date"), ("Mai", "I-date"), ("1916", "I-date")]),
        ("turkish-wiki-ner", "test", 0, [("Tonio", "B-PERSON"), ("Kröger", "I-PERSON")]),
    ],
)
def test_conll_sets_are_read_as_published(server, tmp_path, name, split, sentence, expected):
    report = fetch(served(name, server), tmp_path)
    sentences = conll(tmp_path / name / f"{split}.conll")
    assert all(pair in sentences[sentence] for pair in expected)
    assert report["splits"][split]["sentences"] == FIXTURE_SIZES[name][split]


# ------------------------------------------------------------------------------ POS, QA


@pytest.mark.parametrize(
    "name, prefix", [("ud-turkish-imst", "tr_imst"), ("ud-turkish-boun", "tr_boun")]
)
def test_ud_treebanks_are_checked_and_copied_byte_for_byte(server, tmp_path, name, prefix):
    report = fetch(served(name, server), tmp_path)
    for split, published in (("train", "train"), ("valid", "dev"), ("test", "test")):
        source = fixture_path(DATASETS[name].source.key, f"{prefix}-ud-{published}.conllu")
        assert (tmp_path / name / f"{split}.conllu").read_bytes() == source.read_bytes()
    sentences, _ = readers.read_conllu(tmp_path / name / "test.conllu")
    assert report["splits"]["test"]["words"] == sum(len(s.words) for s in sentences)
    assert report["splits"]["test"]["read"]["skipped"]["multi-word token range"] >= 1


def test_tquad_dev_file_becomes_the_test_split_with_string_offsets_kept(server, tmp_path):
    report = fetch(served("tquad", server), tmp_path)
    assert sorted(p.name for p in (tmp_path / "tquad").iterdir()) == [
        REPORT_FILE,
        "test.json",
        "train.json",
    ]
    assert report["splits"]["test"] == {
        "source": "dev-v0.1.json",
        "questions": 1,
        "answers": 3,
        "contexts": 1,
        "read": report["splits"]["test"]["read"],
    }
    examples, _ = readers.read_squad(tmp_path / "tquad" / "train.json")
    assert examples[2].answers[0].text == "İbn-i Yunus ve Mewsilî "  # edge whitespace kept


# ------------------------------------------------------------------------------ sentiment


def sentiment_lines(directory: Path, split: str, label: str):
    path = directory / f"{split}.{label}"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


def test_sentiment_paper_preprocessing_from_a_local_copy(tmp_path):
    dataset = dataclasses.replace(
        DATASETS["turkish-sentiment"], expected=FIXTURE_SIZES["turkish-sentiment"]
    )
    report = fetch(dataset, tmp_path / "out", local=FIXTURES / "winvoker-turkish-sentiment")
    directory = tmp_path / "out" / "turkish-sentiment"
    assert not list(directory.glob("*.neutral"))
    train = {
        label: sentiment_lines(directory, "train", label) for label in ("positive", "negative")
    }
    valid = {
        label: sentiment_lines(directory, "valid", label) for label in ("positive", "negative")
    }
    # 7 positive and 3 negative rows; a tenth of the 10 (one row) is set aside first, then the
    # training negatives are drawn again up to the positives.
    assert sum(map(len, valid.values())) == 1
    assert len(train["positive"]) == len(train["negative"]) == 7 - len(valid["positive"])
    published_negatives = {
        "Bluetooth bağlantısı zayıf. Samsung health telefonla uyumlu değil.",
        'kargo "hızlı" ama kutu ezik',
        "berbat bir film",
    }
    assert set(train["negative"]) | set(valid["negative"]) == published_negatives
    assert "NA" in train["positive"] + valid["positive"]  # a text, not a missing value
    assert "çok güzel, tavsiye ederim" in train["positive"] + valid["positive"]
    # The test split keeps its published distribution.
    assert sentiment_lines(directory, "test", "negative") == ["hiç beğenmedim"]
    assert sentiment_lines(directory, "test", "positive") == ["harika, teşekkürler", "güzel"]
    assert report["splits"]["train"]["dropped Notr"] == 2
    assert report["splits"]["train"]["line breaks inside a text replaced by spaces"] == 1
    assert report["splits"]["train"]["repeated texts kept"] == 0
    assert report["splits"]["test"]["texts also in train kept"] == 0
    examples, _ = readers.read_classification(sorted(directory.glob("train.*")))
    assert len(examples) == 2 * len(train["positive"])


def test_sentiment_balanced_test_and_three_classes(tmp_path):
    local = FIXTURES / "winvoker-turkish-sentiment"
    for name in ("turkish-sentiment-balanced-test", "turkish-sentiment-3class"):
        dataset = dataclasses.replace(DATASETS[name], expected=FIXTURE_SIZES[name])
        fetch(dataset, tmp_path, local=local)
    balanced = tmp_path / "turkish-sentiment-balanced-test"
    assert sentiment_lines(balanced, "test", "negative") == ["hiç beğenmedim"] * 2
    three = tmp_path / "turkish-sentiment-3class"
    assert sentiment_lines(three, "test", "neutral") == ["İstanbul büyük bir şehirdir ."]
    assert (
        len(sentiment_lines(three, "train", "negative"))
        + len(sentiment_lines(three, "valid", "negative"))
        == 3
    )


def test_sentiment_is_fetched_from_the_hub_at_the_catalogue_revision(tmp_path, monkeypatch):
    import huggingface_hub

    calls = []

    def hub_download(repo_id, filename, repo_type, revision, local_dir):
        calls.append((repo_id, filename, repo_type, revision))
        source = FIXTURES / "winvoker-turkish-sentiment" / filename
        (Path(local_dir) / filename).write_bytes(source.read_bytes())
        return str(Path(local_dir) / filename)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", hub_download)
    dataset = dataclasses.replace(
        DATASETS["turkish-sentiment"], expected=FIXTURE_SIZES["turkish-sentiment"]
    )
    report = fetch(dataset, tmp_path)
    source: HubSource = dataset.source
    assert calls == [
        (source.repo_id, "train.csv", "dataset", "main"),
        (source.repo_id, "test.csv", "dataset", "main"),
    ]
    assert report["source"]["files"]["test.csv"]["sha256"] == sha256(
        FIXTURES / "winvoker-turkish-sentiment" / "test.csv"
    )
    fetch(dataset, tmp_path)  # a second fetch downloads nothing
    assert len(calls) == 2


def test_a_failed_hub_download_names_the_dataset_and_file(tmp_path, monkeypatch):
    import huggingface_hub

    def offline(*args, **kwargs):
        raise ConnectionError("no route to host")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", offline)
    with pytest.raises(DownloadError) as error:
        fetch(DATASETS["turkish-sentiment"], tmp_path)
    assert str(error.value).startswith(
        "https://huggingface.co/datasets/winvoker/turkish-sentiment-analysis-dataset "
        "(train.csv at revision main): ConnectionError: no route to host"
    )


def test_repeated_texts_are_kept_and_counted(tmp_path):
    local = tmp_path / "copy"
    local.mkdir()
    rows = ["iyi,Positive,x", "iyi,Positive,x", "kötü,Negative,x", "fena,Negative,x"]
    (local / "train.csv").write_text("text,label,dataset\n" + "\n".join(rows) + "\n")
    (local / "test.csv").write_text("text,label,dataset\nkötü,Negative,x\nhoş,Positive,x\n")
    dataset = dataclasses.replace(DATASETS["turkish-sentiment-3class"], expected={})
    dataset = dataclasses.replace(dataset, options={**dataset.options, "valid_fraction": 0})
    report = fetch(dataset, tmp_path / "out", local=local)
    assert report["splits"]["train"]["repeated texts kept"] == 1
    assert report["splits"]["test"]["texts also in train kept"] == 1
    assert sentiment_lines(tmp_path / "out" / dataset.name, "train", "positive") == ["iyi", "iyi"]


def test_a_label_the_catalogue_does_not_know_names_the_row(tmp_path):
    local = tmp_path / "copy"
    local.mkdir()
    (local / "train.csv").write_text("text,label,dataset\niyi,Positive,x\nkötü,Mixed,x\n")
    (local / "test.csv").write_text("text,label,dataset\niyi,Positive,x\n")
    dataset = dataclasses.replace(DATASETS["turkish-sentiment"], expected={})
    with pytest.raises(DownstreamDataError, match=r"train.csv: data row 2: label 'Mixed' is not"):
        fetch(dataset, tmp_path / "out", local=local)


# ------------------------------------------------------------------------------ bad input


def test_pinned_checksum_mismatch_names_the_file_and_the_expected_hash(server, tmp_path):
    dataset = served("tquad", server)
    changed = b'{"data": []}'
    FixtureHandler.pages["/tquad/dev-v0.1.json"] = changed
    with pytest.raises(DownloadError) as error:
        fetch(dataset, tmp_path)
    pinned = sha256(FIXTURES / "tquad" / "dev-v0.1.json")
    message = str(error.value)
    assert f"{server}/tquad/dev-v0.1.json: sha256 of " in message
    assert f"dev-v0.1.json is {hashlib.sha256(changed).hexdigest()}" in message
    assert f"expected {pinned}" in message
    assert not (tmp_path / "tquad").exists()


def test_recorded_checksum_catches_a_changed_file_on_a_later_fetch(server, tmp_path):
    dataset = served("sturm", server, pin=False)
    fetch(dataset, tmp_path)
    published = tmp_path / SOURCES_DIR / "neiss-sturm" / "dev_sturm.conll"
    assert Path(f"{published}.sha256").read_text().split()[0] == sha256(published)
    published.write_bytes(published.read_bytes().replace(b"Herw", b"Herwarth"))
    with pytest.raises(DownloadError, match=r"dev_sturm.conll.sha256 recorded .* at the first"):
        fetch(dataset, tmp_path)


def test_a_size_other_than_the_published_one_leaves_nothing_behind(server, tmp_path):
    dataset = dataclasses.replace(served("arendt", server), expected={"train": 8_582})
    with pytest.raises(DownstreamDataError) as error:
        fetch(dataset, tmp_path)
    source = tmp_path / SOURCES_DIR / "neiss-arendt" / "train_arendt.conll"
    assert str(error.value).startswith(
        f"{source}: 2 sentences, but arendt's train split is published with 8,582"
    )
    assert not (tmp_path / "arendt").exists()
    assert not list(tmp_path.glob(".arendt-*"))  # no staging folder either
    assert not Path(f"{source}.sha256").exists()  # a file that failed is never trusted


def test_a_web_page_in_place_of_a_file_is_refused_and_not_kept(server, tmp_path):
    FixtureHandler.pages["/germeval2014/NER-de-dev.tsv"] = (
        b"\n<!DOCTYPE html><html><title>Google Drive - Quota exceeded</title></html>"
    )
    with pytest.raises(DownloadError, match=r"NER-de-dev.tsv: the server sent a web page"):
        fetch(served("germeval2014", server), tmp_path)
    assert not (tmp_path / SOURCES_DIR / "germeval2014" / "NER-de-dev.tsv").exists()


def test_a_missing_file_names_its_url(server, tmp_path):
    dataset = served("sturm", server)
    files = (dataclasses.replace(dataset.source.files[0], url=f"{server}/neiss-sturm/gone"),)
    dataset = dataclasses.replace(dataset, source=dataclasses.replace(dataset.source, files=files))
    with pytest.raises(DownloadError, match=rf"{server}/neiss-sturm/gone: HTTP 404"):
        fetch(dataset, tmp_path)


def test_a_local_copy_without_the_file_says_which(tmp_path):
    with pytest.raises(DownloadError, match=r"copy: no train.csv in that directory or below it"):
        fetch(DATASETS["turkish-sentiment"], tmp_path / "out", local=tmp_path / "copy")


def test_a_broken_published_line_is_named(server, tmp_path):
    text = (FIXTURES / "germeval2014" / "NER-de-train.tsv").read_text(encoding="utf-8")
    FixtureHandler.pages["/germeval2014/NER-de-train.tsv"] = text.replace(
        "2\tseiner\tO\tO", "2\tseiner\tO"
    ).encode()
    with pytest.raises(DownstreamDataError) as error:
        fetch(served("germeval2014", server), tmp_path)
    source = tmp_path / SOURCES_DIR / "germeval2014" / "NER-de-train.tsv"
    assert str(error.value).startswith(f"{source}:3: 3 columns where the file's word lines have 4")


# ------------------------------------------------------------------------------ command line


def test_unknown_name_lists_the_catalogue(capsys):
    assert cli.main(["fetch", "germeval", "--out", "x"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("error: unknown data set 'germeval'; the catalogue has ")
    assert "germeval2014" in error and "small-bert-paper" in error


def test_fetch_command_prints_each_directory_and_its_sizes(server, tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(cli.__dict__, "resolve", lambda names: [served("sturm", server)])
    assert cli.main(["fetch", "sturm", "--out", str(tmp_path)]) == 0
    assert capsys.readouterr().out == (
        f"sturm: {tmp_path / 'sturm'} (train 2 sentences, valid 1 sentences, test 1 sentences)\n"
    )


def test_fetch_command_reports_a_failure_with_status_1(server, tmp_path, monkeypatch, capsys):
    dataset = dataclasses.replace(served("sturm", server), expected={"test": 285})
    monkeypatch.setitem(cli.__dict__, "resolve", functools.partial(lambda d, names: [d], dataset))
    assert cli.main(["fetch", "sturm", "--out", str(tmp_path)]) == 1
    assert "error: sturm: " in capsys.readouterr().err


@pytest.mark.parametrize(
    "name, local",
    [
        ("turkish-sentiment", True),
        ("turkish-sentiment-3class", True),
        ("tquad", False),
        ("germeval2014", False),
        ("ud-turkish-boun", False),
    ],
)
def test_converted_files_are_known_before_fetching(server, tmp_path, name, local):
    if local:
        dataset = dataclasses.replace(DATASETS[name], expected=FIXTURE_SIZES[name])
        fetch(dataset, tmp_path, local=FIXTURES / "winvoker-turkish-sentiment")
    else:
        dataset = served(name, server)
        fetch(dataset, tmp_path)
    written = sorted(p.name for p in (tmp_path / name).iterdir() if p.name != REPORT_FILE)
    named = sorted(
        f for split in ("train", "valid", "test") for f in dataset.converted_files(split)
    )
    assert written == named
