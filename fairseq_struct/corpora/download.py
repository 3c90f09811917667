"""Resumable, verified HTTP downloads with the standard library (urllib).

A file is fetched into `DEST.part`, resumed with an HTTP Range request after an interruption, and
renamed to DEST only once its size and checksum (where known) are verified. Where no checksum is
published, `record_or_verify_sha256` records the first download's sha256 in `DEST.sha256`.
"""

import hashlib
import http.client
import logging
import os
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable, Optional, Union

from fairseq_struct.corpus_io import atomic_write_bytes
from fairseq_struct.progress import StageProgress

logger = logging.getLogger(__name__)

PathLike = Union[str, Path]
CHUNK_BYTES = 1 << 20
PROGRESS_LOG_BYTES = 100 << 20  # a log line every 100 MiB where no bar is shown
_PERMANENT = {400, 401, 403, 404, 405, 410}


class DownloadError(RuntimeError):
    """A download that failed for good; the message names the URL and what went wrong."""


def file_digest(path: PathLike, algorithm: str = "sha256") -> str:
    digest = hashlib.new(algorithm)
    with open(path, "rb") as file:
        for chunk in iter(lambda: file.read(CHUNK_BYTES), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verify_file(
    path: PathLike,
    url: str,
    size: Optional[int] = None,
    md5: Optional[str] = None,
    sha256: Optional[str] = None,
) -> None:
    """Raise DownloadError when `path` does not have the expected size or checksums."""
    actual_size = os.path.getsize(path)
    if size is not None and actual_size != size:
        raise DownloadError(f"{url}: got {actual_size} bytes in {path}, expected {size}")
    for algorithm, expected in (("md5", md5), ("sha256", sha256)):
        if expected is not None:
            actual = file_digest(path, algorithm)
            if actual != expected.lower():
                raise DownloadError(
                    f"{url}: {algorithm} of {path} is {actual}, expected {expected}; the file is "
                    "corrupt or the source changed"
                )


def download(
    url: str,
    dest: PathLike,
    size: Optional[int] = None,
    md5: Optional[str] = None,
    sha256: Optional[str] = None,
    retries: int = 5,
    backoff_seconds: float = 2.0,
    timeout_seconds: float = 60.0,
    sleep: Callable[[float], None] = time.sleep,
) -> Path:
    """Download `url` to `dest` unless a verified `dest` is there; returns `dest`.

    Raises DownloadError, naming the URL, after `retries` failed attempts or on a size or
    checksum mismatch (a mismatching part file is deleted so that the next run starts afresh).
    """
    dest = Path(dest)
    if dest.exists():
        verify_file(dest, url, size, md5, sha256)
        logger.info("%s: already there and verified", dest)
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    last_error: Optional[BaseException] = None
    for attempt in range(1, retries + 1):
        try:
            _fetch_into(url, part, size, timeout_seconds)
            break
        except (OSError, http.client.HTTPException, DownloadError) as error:
            # A client error (404, 403) will not go away by retrying; a timeout or 429 may.
            if isinstance(error, urllib.error.HTTPError) and error.code in _PERMANENT:
                raise DownloadError(f"{url}: HTTP {error.code} {error.reason}") from error
            last_error = error
            if attempt < retries:
                delay = backoff_seconds * 2 ** (attempt - 1)
                logger.warning(
                    "%s: attempt %d failed (%s); retrying in %.0f s", url, attempt, error, delay
                )
                sleep(delay)
    else:
        raise DownloadError(
            f"{url}: failed after {retries} attempts, last error: {last_error}; the partial "
            f"file {part} is kept and the next run resumes from it"
        )
    try:
        verify_file(part, url, size, md5, sha256)
    except DownloadError:
        part.unlink()
        raise
    os.replace(part, dest)
    return dest


def _fetch_into(url: str, part: Path, size: Optional[int], timeout_seconds: float) -> None:
    have = part.stat().st_size if part.exists() else 0
    if size is not None and have == size:
        return
    if size is not None and have > size:
        part.unlink()
        have = 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
    try:
        response = urllib.request.urlopen(request, timeout=timeout_seconds)
    except urllib.error.HTTPError as error:
        if error.code == 416 and have:
            # The part file already holds the whole file (its size was not known here).
            return
        raise
    with response:
        resumed = response.status == 206
        if have and not resumed:
            logger.info("%s: the server ignored the range request; starting again", url)
        expected_total = _content_length(response)
        with open(part, "ab" if resumed else "wb") as file, StageProgress(
            f"downloading {part.name.removesuffix('.part')}",
            total=expected_total,
            unit="bytes",
            log_every=PROGRESS_LOG_BYTES,
        ) as progress:
            for chunk in iter(lambda: response.read(CHUNK_BYTES), b""):
                file.write(chunk)
                progress.update(len(chunk))
    got = part.stat().st_size - (have if resumed else 0)
    if expected_total is not None and got < expected_total:
        # A connection cut midway ends the body early without an exception.
        raise DownloadError(f"{url}: connection closed after {got} of {expected_total} bytes")


def _content_length(response) -> Optional[int]:
    value = response.headers.get("Content-Length")
    return int(value) if value is not None and value.isdigit() else None


def manifest_path(path: PathLike) -> Path:
    return Path(f"{path}.sha256")


def record_or_verify_sha256(path: PathLike, url: str) -> str:
    """Verify `path` against its manifest, or write the manifest when there is none yet.

    For sources that publish no checksum: the first download is trusted (after the caller's own
    integrity checks) and every later run must find the same bytes.
    """
    actual = file_digest(path)
    manifest = manifest_path(path)
    if manifest.exists():
        recorded = manifest.read_text(encoding="utf-8").split()[0]
        if recorded != actual:
            raise DownloadError(
                f"{url}: sha256 of {path} is {actual}, but {manifest} recorded {recorded} at the "
                "first download; the file changed (delete both to accept the new one)"
            )
    else:
        atomic_write_bytes(manifest, f"{actual}  {Path(path).name}\n".encode())
    return actual
