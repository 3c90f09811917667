"""`ChunkStore`: the files a streamed preparation works through, chunk by chunk, and resumes from.

A stage's output for a chunk is keyed by the SHA-256 of the stage's fingerprint (model or
segmenter, and options) and of the chunk's input, so a restarted run redoes only the chunks with
no output yet and never uses a stale one. Layout (by default in OUT_DIR/.prepare-work, removed
after a run that completes; every file written atomically):
    input/{split}.{side}.{index:06d}   the checked, whitespace-normalised lines of one chunk
    {stage}/{key}.txt                  a stage's output lines for a chunk
    {stage}/{key}.json                 its statistics, written after the .txt: the chunk is done
"""

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any, Callable, Dict, Hashable, Iterable, List, Optional, Sequence, Tuple, TypeVar

from fairseq_struct.corpus_io import atomic_write_json, atomic_write_lines, atomic_writer
from fairseq_struct.morph.forked_helpers import ForkedHelpers
from fairseq_struct.progress import StageProgress

# Lines per chunk: the unit of restart and of work handed to a process. 50,000 lines of
# OpenSubtitles are about 3 MB of text and a few seconds of Turkish segmentation per process.
DEFAULT_CHUNK_LINES = 50_000

ChunkStats = Dict[str, Any]
# What `process_chunk` gives for one chunk: (key, statistics, reused).
ChunkResult = Tuple[str, ChunkStats, bool]
Group = TypeVar("Group", bound=Hashable)
Task = TypeVar("Task")


class ChunkStore:
    """Chunk files under `directory`; see the module docstring for the layout."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    def input_path(self, split: str, side: str, index: int) -> Path:
        return self.directory / "input" / f"{split}.{side}.{index:06d}"

    def output_path(self, stage: str, key: str) -> Path:
        return self.directory / stage / f"{key}.txt"

    def key(self, fingerprint: str, contents: Sequence[bytes]) -> str:
        """The key of a stage's output for the chunk made of `contents` (its input files' bytes,
        in order)."""
        digest = hashlib.sha256(fingerprint.encode("utf-8"))
        for data in contents:
            digest.update(b"\0" + data)
        return digest.hexdigest()[:32]

    def finished(self, stage: str, key: str) -> Optional[ChunkStats]:
        """The statistics of a chunk this stage has finished, or None."""
        stats_path = self.directory / stage / f"{key}.json"
        if not stats_path.is_file() or not self.output_path(stage, key).is_file():
            return None
        return json.loads(stats_path.read_text(encoding="utf-8"))

    def write(self, stage: str, key: str, lines: Iterable[str], stats: ChunkStats) -> None:
        """Store a chunk's output and then its statistics, which mark it finished."""
        atomic_write_lines(self.output_path(stage, key), lines)
        atomic_write_json(self.directory / stage / f"{key}.json", stats)

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


def read_chunk(path: Path) -> List[str]:
    """The lines of a chunk file written by this module (valid UTF-8, one "\\n" per line)."""
    return _chunk_lines(path.read_bytes())


def _chunk_lines(data: bytes) -> List[str]:
    return data.decode("utf-8").split("\n")[:-1]


def process_chunk(
    store: ChunkStore,
    stage: str,
    fingerprint: str,
    inputs: Sequence[Path],
    compute: Any,
) -> Tuple[str, ChunkStats, bool]:
    """(key, statistics, reused) of one chunk: its stored output when this stage has finished
    it, else `compute(*lines of each input)` -> (output lines, statistics), stored first."""
    contents = [path.read_bytes() for path in inputs]  # read once: for the key and the lines
    key = store.key(fingerprint, contents)
    stats = store.finished(stage, key)
    if stats is not None:
        return key, stats, True
    lines, stats = compute(*(_chunk_lines(data) for data in contents))
    store.write(stage, key, lines, stats)
    return key, stats, False


def concatenate(paths: Iterable[Path], destination: Path) -> None:
    """`destination`, atomically, as the concatenation of `paths`."""
    with atomic_writer(destination) as out:
        for path in paths:
            with open(path, "rb") as chunk:
                shutil.copyfileobj(chunk, out, 1 << 22)


def run_chunk_stage(
    store: ChunkStore,
    stage: str,
    function: Callable[[Task], ChunkResult],
    groups: Dict[Group, Sequence[Task]],
    progress: StageProgress,
    collect: Callable[[Group, ChunkStats], None],
    destination: Optional[Callable[[Group], Path]] = None,
    workers: int = 1,
) -> Tuple[Dict[Group, List[Path]], Dict[str, int]]:
    """Run one stage of a streamed preparation over the chunk tasks of each group (a split, or
    a split and a side): `function(task)` -> `process_chunk`'s (key, statistics, reused), in
    `workers` processes (`ForkedHelpers`; with 1, `function` need not be picklable).

    Each chunk's statistics go to `collect(group, statistics)` as they come, in order (the
    caller sums them: they are not kept, so memory does not grow with the corpus); `progress`
    counts their "lines". Each group's outputs are concatenated into `destination(group)` where
    it is given. Returns the output chunks of each group, and the chunks done and reused.
    """
    outputs: Dict[Group, List[Path]] = {}
    reused = 0
    with ForkedHelpers(workers) as helpers:
        for group, tasks in groups.items():
            outputs[group] = []
            for _, (key, stats, was_reused) in helpers.map(function, tasks):
                outputs[group].append(store.output_path(stage, key))
                reused += was_reused
                progress.update(stats["lines"])
                collect(group, stats)
            if destination is not None:
                concatenate(outputs[group], destination(group))
    return outputs, {"chunks": sum(map(len, outputs.values())), "chunks_reused": reused}
