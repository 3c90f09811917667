"""Fixtures shared across the test suite."""

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
USER_DIR = str(REPO_ROOT / "fairseq_struct")
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"


def venv_tool(name: str) -> str:
    """Console scripts of the interpreter that runs the tests (fairseq-train, torchrun ...)."""
    return str(Path(sys.executable).with_name(name))


def run_tool(args: list, cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    result = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise AssertionError(
            f"{' '.join(map(str, args))} failed ({result.returncode}):\n{result.stderr[-4000:]}"
        )
    return result


@pytest.fixture(scope="session")
def tiny_translation_data(tmp_path_factory) -> Path:
    """A small binarized copy task in SentencePiece-like pieces, made with stock
    fairseq-preprocess: enough for a few training updates and a generate run."""
    root = tmp_path_factory.mktemp("tiny-translation")
    rng = random.Random(0)
    words = [f"\u2581w{i}" for i in range(40)]
    for split, size in (("train", 400), ("valid", 40), ("test", 40)):
        source = [" ".join(rng.choices(words, k=rng.randint(3, 8))) for _ in range(size)]
        (root / f"{split}.en").write_text("\n".join(source) + "\n", encoding="utf-8")
        target = [" ".join(reversed(line.split())) for line in source]
        (root / f"{split}.tr").write_text("\n".join(target) + "\n", encoding="utf-8")
    run_tool(
        [
            venv_tool("fairseq-preprocess"),
            "--source-lang",
            "en",
            "--target-lang",
            "tr",
            "--trainpref",
            root / "train",
            "--validpref",
            root / "valid",
            "--testpref",
            root / "test",
            "--joined-dictionary",
            "--destdir",
            root / "bin",
            "--workers",
            "1",
        ],
        cwd=root,
    )
    return root / "bin"


def tiny_train_args(data: Path, save_dir: Path, max_update: int) -> list:
    """fairseq-train arguments for a few updates of the tiny TP-Transformer on the CPU."""
    return [
        str(data),
        "--user-dir",
        USER_DIR,
        "--task",
        "translation_morph",
        "--arch",
        "tp_transformer_tiny",
        "--share-all-embeddings",
        "--optimizer",
        "adafactor",
        "--lr",
        "0.001",
        "--lr-scheduler",
        "inverse_sqrt",
        "--warmup-updates",
        "10",
        "--criterion",
        "label_smoothed_cross_entropy",
        "--label-smoothing",
        "0.1",
        "--batch-size",
        "16",
        "--max-update",
        str(max_update),
        "--save-dir",
        str(save_dir),
        "--no-epoch-checkpoints",
        "--cpu",
        "--num-workers",
        "0",
        "--seed",
        "1",
        "--log-format",
        "simple",
        "--log-interval",
        "1",
    ]
