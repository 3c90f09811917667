"""The README's demo command, shrunk to a smoke run: every stage of scripts/demo.sh runs on a
small corpus and the run ends with sacreBLEU scores and signatures (the full demo, with its
>= 50 BLEU, is `make demo`)."""

import json
import os
import subprocess

from conftest import REPO_ROOT


def test_demo_script_runs_every_stage_and_prints_signed_scores(tmp_path):
    env = dict(
        os.environ,
        DEMO_WORK=str(tmp_path / "work"),
        DEMO_DATA=str(tmp_path / "data-bin"),
        DEMO_TRAIN_PAIRS="1500",
        DEMO_MAX_UPDATE="20",
        DEMO_THREADS="1",
        PYTHONWARNINGS="ignore",
    )
    result = subprocess.run(
        ["bash", "scripts/demo.sh"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert "Zemberek recognises 100.00%" in output
    assert "BLEU" in output and "tok:13a" in output and "chrF2" in output
    scores = json.loads((tmp_path / "work" / "eval-morph" / "scores.json").read_text())
    assert set(scores) >= {"BLEU", "chrF", "chrF++"} or "scores" in scores
