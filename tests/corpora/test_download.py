"""Resumable, verified downloads and corpus fetching, against a local HTTP server that supports
Range requests and can cut a connection midway."""

import hashlib
import http.server
import io
import logging
import tarfile
import threading
import zipfile
from pathlib import Path

import pytest

from fairseq_struct.corpora.catalog import CORPORA, Archive, Corpus, Member, check_archive, fetch
from fairseq_struct.corpora.download import (
    DownloadError,
    download,
    manifest_path,
    record_or_verify_sha256,
)
from fairseq_struct.corpus_io import CorpusError

PAYLOAD = bytes(range(256)) * 40  # 10,240 bytes


class RangeHandler(http.server.BaseHTTPRequestHandler):
    """Serves `files` by path, honours `Range: bytes=N-`, and can cut a body after `cut` bytes."""

    files: dict = {}
    cut: dict = {}  # path -> how many more responses to cut after this many bytes
    requests: list = []

    def do_GET(self) -> None:
        type(self).requests.append((self.path, self.headers.get("Range")))
        data = self.files.get(self.path)
        if data is None:
            self.send_error(404)
            return
        start = 0
        header = self.headers.get("Range")
        if header is not None:
            start = int(header.split("=")[1].rstrip("-"))
            if start >= len(data):
                self.send_response(416)
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        cuts = self.cut.get(self.path)
        if cuts:
            count, limit = cuts
            self.cut[self.path] = (count - 1, limit) if count > 1 else None
            self.wfile.write(body[:limit])
            self.close_connection = True
            return
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def server():
    RangeHandler.files = {}
    RangeHandler.cut = {}
    RangeHandler.requests = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), RangeHandler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def no_sleep(seconds: float) -> None:
    pass


def test_download_writes_the_file_and_verifies_size_and_checksums(server, tmp_path: Path):
    RangeHandler.files["/a.zip"] = PAYLOAD
    dest = download(
        f"{server}/a.zip",
        tmp_path / "a.zip",
        size=len(PAYLOAD),
        md5=hashlib.md5(PAYLOAD).hexdigest(),
        sha256=hashlib.sha256(PAYLOAD).hexdigest(),
    )
    assert dest.read_bytes() == PAYLOAD
    assert not (tmp_path / "a.zip.part").exists()


def test_connection_cut_midway_is_resumed_with_a_range_request(server, tmp_path: Path):
    RangeHandler.files["/a.zip"] = PAYLOAD
    RangeHandler.cut["/a.zip"] = (2, 3000)  # the first two responses stop after 3000 bytes
    dest = download(f"{server}/a.zip", tmp_path / "a.zip", sleep=no_sleep)
    assert dest.read_bytes() == PAYLOAD
    assert [r for _, r in RangeHandler.requests] == [None, "bytes=3000-", "bytes=6000-"]


def test_part_file_left_by_an_earlier_run_is_resumed(server, tmp_path: Path):
    RangeHandler.files["/a.zip"] = PAYLOAD
    (tmp_path / "a.zip.part").write_bytes(PAYLOAD[:5000])
    download(f"{server}/a.zip", tmp_path / "a.zip", size=len(PAYLOAD))
    assert (tmp_path / "a.zip").read_bytes() == PAYLOAD
    assert RangeHandler.requests == [("/a.zip", "bytes=5000-")]


def test_complete_part_file_of_unknown_size_is_accepted_after_416(server, tmp_path: Path):
    RangeHandler.files["/a.zip"] = PAYLOAD
    (tmp_path / "a.zip.part").write_bytes(PAYLOAD)
    download(f"{server}/a.zip", tmp_path / "a.zip")
    assert (tmp_path / "a.zip").read_bytes() == PAYLOAD


def test_checksum_mismatch_names_the_url_and_leaves_no_file(server, tmp_path: Path):
    RangeHandler.files["/a.zip"] = PAYLOAD
    with pytest.raises(DownloadError, match=r"/a.zip: md5 of .* expected 0+"):
        download(f"{server}/a.zip", tmp_path / "a.zip", md5="0" * 32)
    assert list(tmp_path.iterdir()) == []


def test_missing_file_fails_at_once_naming_the_url(server, tmp_path: Path):
    with pytest.raises(DownloadError, match=r"/missing.zip: HTTP 404"):
        download(f"{server}/missing.zip", tmp_path / "m.zip", sleep=no_sleep)
    assert len(RangeHandler.requests) == 1


def test_retries_give_up_with_the_last_error_and_keep_the_part_file(server, tmp_path: Path):
    RangeHandler.files["/a.zip"] = PAYLOAD
    RangeHandler.cut["/a.zip"] = (10, 1000)
    delays = []
    with pytest.raises(DownloadError, match=r"/a.zip: failed after 3 attempts"):
        download(f"{server}/a.zip", tmp_path / "a.zip", retries=3, sleep=delays.append)
    assert delays == [2.0, 4.0]  # exponential backoff
    assert (tmp_path / "a.zip.part").read_bytes() == PAYLOAD[:3000]


def test_existing_file_is_verified_not_downloaded_again(server, tmp_path: Path):
    (tmp_path / "a.zip").write_bytes(b"stale")
    with pytest.raises(DownloadError, match="expected 10240"):
        download(f"{server}/a.zip", tmp_path / "a.zip", size=len(PAYLOAD))
    assert RangeHandler.requests == []


def test_manifest_records_the_first_sha256_and_rejects_a_changed_file(tmp_path: Path):
    archive = tmp_path / "a.zip"
    archive.write_bytes(PAYLOAD)
    recorded = record_or_verify_sha256(archive, "http://example/a.zip")
    assert manifest_path(archive).read_text().split() == [recorded, "a.zip"]
    assert record_or_verify_sha256(archive, "http://example/a.zip") == recorded
    archive.write_bytes(PAYLOAD[:-1])
    with pytest.raises(DownloadError, match=r"http://example/a.zip: sha256 .* recorded"):
        record_or_verify_sha256(archive, "http://example/a.zip")


def make_zip(members: dict) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in members.items():
            archive.writestr(name, text)
    return buffer.getvalue()


def make_tgz(members: dict) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, text in members.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


SGML_SOURCE = '<srcset>\n<doc docid="1">\n<seg id="1">Hello  world </seg>\n<seg id="2">Bye</seg>\n'
SGML_REFERENCE = (
    '<refset>\n<doc docid="1">\n<seg id="1"> Merhaba dünya</seg>\n<seg id="2">Hoşça kal</seg>\n'
)


def toy_corpus(server: str, test_tgz: bytes) -> Corpus:
    opus = Archive(f"{server}/en-tr.txt.zip", "opus.zip")
    wmt = Archive(f"{server}/test.tgz", "test.tgz", md5=hashlib.md5(test_tgz).hexdigest())
    return Corpus(
        "toy-en-tr",
        "a toy OPUS corpus and WMT test set",
        "en",
        "tr",
        (
            Member(opus, "Toy.en-tr.en", "train", "en"),
            Member(opus, "Toy.en-tr.tr", "train", "tr"),
            Member(wmt, "sgm/test-src.en.sgm", "test", "en", sgml=True),
            Member(wmt, "sgm/test-ref.tr.sgm", "test", "tr", sgml=True),
        ),
        expected_pairs={"test": 2},
    )


def test_fetch_downloads_verifies_and_extracts_each_split(server, tmp_path: Path):
    RangeHandler.files["/en-tr.txt.zip"] = make_zip(
        {"Toy.en-tr.en": "a\nb\n", "Toy.en-tr.tr": "c\nd\n", "README": "x"}
    )
    test_tgz = make_tgz({"sgm/test-src.en.sgm": SGML_SOURCE, "sgm/test-ref.tr.sgm": SGML_REFERENCE})
    RangeHandler.files["/test.tgz"] = test_tgz
    outputs = fetch(toy_corpus(server, test_tgz), tmp_path)
    root = tmp_path / "toy-en-tr"
    assert outputs == {
        "train": (root / "train.en", root / "train.tr"),
        "test": (root / "test.en", root / "test.tr"),
    }
    assert (root / "train.tr").read_text() == "c\nd\n"
    # <seg> text cleaned exactly as sacreBLEU does
    assert (root / "test.en").read_text() == "Hello world\nBye\n"
    assert (root / "test.tr").read_text() == "Merhaba dünya\nHoşça kal\n"
    # no published checksum for the OPUS zip: its sha256 is recorded for later runs
    assert (root / "opus.zip.sha256").exists() and not (root / "test.tgz.sha256").exists()


def test_fetch_refuses_a_misaligned_archive_naming_both_members(server, tmp_path: Path):
    RangeHandler.files["/en-tr.txt.zip"] = make_zip(
        {"Toy.en-tr.en": "a\nb\n", "Toy.en-tr.tr": "c\n"}
    )
    test_tgz = make_tgz({"sgm/test-src.en.sgm": SGML_SOURCE, "sgm/test-ref.tr.sgm": SGML_REFERENCE})
    RangeHandler.files["/test.tgz"] = test_tgz
    with pytest.raises(CorpusError, match=r"train.en has 2 lines but .*train.tr has 1"):
        fetch(toy_corpus(server, test_tgz), tmp_path)


def test_damaged_archive_is_reported_with_its_path(tmp_path: Path):
    archive = tmp_path / "a.zip"
    data = bytearray(make_zip({"Toy.en-tr.en": "hello world " * 100}))
    data[60] ^= 0xFF  # inside the compressed member
    archive.write_bytes(bytes(data))
    with pytest.raises(CorpusError, match=r"a.zip: .*(CRC|damaged)"):
        check_archive(archive)


def test_registry_names_the_papers_corpora_with_sacrebleu_checksums():
    assert {
        "opensubtitles-en-tr",
        "setimes-en-tr",
        "hansard-en-iu",
        "wmt-en-tr",
        "wmt20-en-iu",
    } <= set(CORPORA)
    wmt = CORPORA["wmt-en-tr"]
    assert wmt.splits == ("valid", "test")
    assert all(member.archive.md5 for member in wmt.members)
    assert CORPORA["hansard-en-iu"].members[0].archive.landing_page


def test_progress_is_reported_in_bytes_with_the_total(server, tmp_path: Path, caplog):
    caplog.set_level(logging.INFO, logger="fairseq_struct.progress")
    RangeHandler.files["/p.zip"] = PAYLOAD
    download(f"{server}/p.zip", tmp_path / "p.zip", size=len(PAYLOAD))
    expected = f"downloading p.zip: {len(PAYLOAD):,}/{len(PAYLOAD):,} bytes, "
    assert [m for m in caplog.messages if m.startswith(expected)], caplog.messages
