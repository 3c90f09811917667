"""The published files of a data set in OUT/sources/KEY/: downloaded once (over HTTP, or from
the Hugging Face hub), or copied from a local copy, and verified against their checksums.

A file whose sha256 the catalogue pins is verified before use; the others get theirs recorded
in FILE.sha256 once the conversion has read them without an error, and every later fetch must
find the same bytes.
"""

import os
import shutil
from pathlib import Path
from typing import Dict, Optional, Sequence

from fairseq_struct.corpora.download import (
    DownloadError,
    download,
    file_digest,
    manifest_path,
    record_or_verify_sha256,
    verify_file,
)
from fairseq_struct.downstream_sets.catalog import HubSource, Source, UrlSource

SOURCES_DIR = "sources"
_HTML_STARTS = (b"<!doctype html", b"<html")


def source_directory(out_dir: Path, source: Source) -> Path:
    return Path(out_dir) / SOURCES_DIR / source.key


def _filenames(source: Source) -> Sequence[str]:
    if isinstance(source, HubSource):
        return source.filenames
    return [file.filename for file in source.files]


def _pinned(source: Source, filename: str) -> Optional[str]:
    if isinstance(source, UrlSource):
        return next(f.sha256 for f in source.files if f.filename == filename)
    return None


def _origin(source: Source, filename: str) -> str:
    if isinstance(source, UrlSource):
        return next(f.url for f in source.files if f.filename == filename)
    return f"{source.homepage} ({filename} at revision {source.revision})"


def fetch_source(source: Source, out_dir: Path, local: Optional[Path] = None) -> Dict[str, Path]:
    """filename -> path of every published file of `source`, fetched or copied if missing.

    Raises:
        DownloadError: naming the file and URL that failed, or the expected checksum.
    """
    directory = source_directory(out_dir, source)
    directory.mkdir(parents=True, exist_ok=True)
    paths: Dict[str, Path] = {}
    for filename in _filenames(source):
        path = directory / filename
        if not path.exists():
            if local is not None:
                _copy_local(local, filename, path)
            elif isinstance(source, UrlSource):
                download(_origin(source, filename), path)
            else:
                _hub_download(source, filename, directory)
            _refuse_html(path, source, filename)
        pinned = _pinned(source, filename)
        if pinned is not None:
            try:
                verify_file(path, _origin(source, filename), sha256=pinned)
            except DownloadError as error:
                raise DownloadError(f"{error}; delete {path} and fetch again") from None
        elif manifest_path(path).exists():
            record_or_verify_sha256(path, _origin(source, filename))
        paths[filename] = path
    return paths


def record_checksums(source: Source, paths: Dict[str, Path]) -> Dict[str, str]:
    """sha256 of every file; recorded beside those the catalogue pins none for (call once the
    files have been read without an error: a first download is trusted only then)."""
    checksums = {}
    for filename, path in paths.items():
        if _pinned(source, filename) is None:
            checksums[filename] = record_or_verify_sha256(path, _origin(source, filename))
        else:
            checksums[filename] = file_digest(path)
    return checksums


def _copy_local(local: Path, filename: str, path: Path) -> None:
    """Copy FILENAME from anywhere under LOCAL (a clone, a hub snapshot, files saved by hand)."""
    found = sorted(p for p in Path(local).rglob(filename) if p.is_file()) if local.is_dir() else []
    if not found:
        raise DownloadError(f"{local}: no {filename} in that directory or below it")
    if len(found) > 1:
        raise DownloadError(
            f"{local}: {filename} is there {len(found)} times ({', '.join(map(str, found))}); "
            "point --from at the folder that holds the one to use"
        )
    part = path.with_name(path.name + ".part")
    shutil.copyfile(found[0], part)
    os.replace(part, path)


def _hub_download(source: HubSource, filename: str, directory: Path) -> None:
    try:
        from huggingface_hub import hf_hub_download
    except ImportError:
        raise DownloadError(
            f"{source.homepage}: downloading from the Hugging Face hub needs huggingface_hub: "
            "pip install 'fairseq-struct[hf]'"
        ) from None
    try:
        hf_hub_download(
            source.repo_id,
            filename,
            repo_type="dataset",
            revision=source.revision,
            local_dir=str(directory),
        )
    except Exception as error:  # the hub client's errors have no common base class of ours
        raise DownloadError(
            f"{_origin(source, filename)}: {type(error).__name__}: {error}; without network, "
            "download the file elsewhere and fetch with --from DIR"
        ) from None


def _refuse_html(path: Path, source: Source, filename: str) -> None:
    """A web page saved in place of the file (a quota, login or consent page) is not data."""
    with open(path, "rb") as file:
        start = file.read(512).lstrip().lower()
    if start.startswith(_HTML_STARTS):
        path.unlink()
        raise DownloadError(
            f"{_origin(source, filename)}: the server sent a web page instead of {filename} "
            f"(a download quota or a consent page?); it was not kept. Download the file by hand "
            f"from {source.homepage} and fetch with --from DIR"
        )
