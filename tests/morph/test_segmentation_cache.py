"""SegmentationCache: segmented lines that survive the run, safely (design.md §3)."""

import sqlite3
import subprocess
import sys

import pytest
from conftest import REPO_ROOT, python_stand_in

from fairseq_struct.morph.segmentation_cache import SegmentationCache


def test_entries_survive_closing_and_reopening(tmp_path):
    path = tmp_path / "cache.sqlite"
    with SegmentationCache(path, "analyser-1") as cache:
        assert cache.get("evlerde") is None
        cache.put("evlerde", ("ev￭ler￭de", 1, False))
        cache.put("Gel !", ("Gel !", 2, True))
    with SegmentationCache(path, "analyser-1") as cache:
        assert cache.get("evlerde") == ("ev￭ler￭de", 1, False)
        assert cache.get("Gel !") == ("Gel !", 2, True)
        assert len(cache) == 2
        assert (cache.hits, cache.misses) == (2, 0)


def test_entries_of_another_analyser_are_never_returned(tmp_path):
    path = tmp_path / "cache.sqlite"
    with SegmentationCache(path, "analyser-1") as cache:
        cache.put("evlerde", ("ev￭ler￭de", 1, False))
    with SegmentationCache(path, "analyser-2") as cache:
        assert cache.get("evlerde") is None
        assert len(cache) == 0


def test_lines_are_keyed_exactly(tmp_path):
    with SegmentationCache(tmp_path / "cache.sqlite", "a") as cache:
        cache.put("Ev ", ("Ev ", 1, False))
        assert cache.get("Ev") is None
        assert cache.get("ev ") is None
        assert cache.get("Ev ") == ("Ev ", 1, False)


def test_a_killed_run_leaves_its_committed_entries(tmp_path):
    path = tmp_path / "cache.sqlite"
    # A child process commits one entry, puts another without committing, and dies abruptly.
    script = (
        "import os;"
        "from fairseq_struct.morph.segmentation_cache import SegmentationCache;"
        f"c = SegmentationCache({str(path)!r}, 'a', commit_every_s=3600);"
        "c.put('committed', ('com￭mitted', 1, False)); c.commit();"
        "c.put('lost', ('lost', 1, False)); os._exit(9)"
    )
    assert subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT).returncode == 9
    with SegmentationCache(path, "a") as cache:
        assert cache.get("committed") == ("com￭mitted", 1, False)
        assert cache.get("lost") is None


def test_a_file_that_is_not_a_cache_is_refused(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("not a database, but long enough to have a header " * 10)
    with pytest.raises(ValueError, match="notes.txt: not a segmentation cache"):
        SegmentationCache(path, "a")


def test_the_file_holds_plain_text_columns(tmp_path):
    path = tmp_path / "cache.sqlite"
    with SegmentationCache(path, "a") as cache:
        cache.put("evlerde", ("ev￭ler￭de", 1, False))
    row = sqlite3.connect(path).execute("SELECT * FROM segmentation").fetchone()
    assert row == ("a", "evlerde", "ev￭ler￭de", 1, 0)


def test_prepare_takes_a_cache_for_turkish_only(tmp_path):
    from fairseq_struct.morph.prepare import parse_args

    splits = ["--train", "t", "--valid", "v", "--test", "s", "--out-dir", str(tmp_path)]
    cache = ["--segmentation-cache", str(tmp_path / "tr.sqlite")]
    assert parse_args(splits + cache).segmentation_cache == str(tmp_path / "tr.sqlite")
    assert parse_args(splits).segmentation_cache is None
    with pytest.raises(SystemExit):
        parse_args(splits + cache + ["--tgt-lang", "iu"])


def test_fingerprint_follows_the_hash_seed_that_zemberek_depends_on():
    """Some Zemberek analyses depend on the string hash seed: caches filled under another seed
    must not be reused, caches filled under the same seed must be."""

    def fingerprint(seed: str) -> str:
        code = (
            "from fairseq_struct.morph.turkish import cache_fingerprint; print(cache_fingerprint())"
        )
        # A process of its own, started with that hash seed (forked from a preloaded server
        # started with it: conftest's python_stand_in).
        python, env = python_stand_in({"PYTHONHASHSEED": seed})
        result = subprocess.run([python, "-c", code], env=env, capture_output=True,
                                text=True, check=True)  # fmt: skip
        return result.stdout.strip().splitlines()[-1]

    assert fingerprint("0") == fingerprint("0") != fingerprint("1")
