"""Sentences/s of `fairseq-struct translate` from raw text vs stock `fairseq-generate` on the
binarized test set: the same model, the same sentences, beam 5, on the CPU.

`.venv/bin/python benchmarks/bench_translate_speed.py --data DATA --path CHECKPOINT` prints one
JSON line: both commands' seconds and sentences/s, `ratio` and `differing_lines`. The demo's
command, how each side runs and the figures: benchmarks/README.md#bench_translate_speedpy.
"""

import argparse
import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Sequence

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from fairseq_struct.commands import environment_tool  # noqa: E402  (the checkout's package)

logger = logging.getLogger("bench_translate_speed")

TARGET_RATIO = 0.95


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="prepared data directory")
    parser.add_argument("--path", type=Path, required=True, help="the checkpoint")
    parser.add_argument("--copies", type=int, default=6, help="test set repeats (default 6)")
    parser.add_argument("--beam", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of each side (3)")
    parser.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS of both (1)")
    return parser.parse_args(argv)


def repeated_test_set(data: Path, copies: int, work: Path) -> Dict[str, object]:
    """The test set `copies` times: raw source for translate, a binarized data dir for generate."""
    report = json.loads((data / "prepare_report.json").read_text(encoding="utf-8"))
    src, tgt = report["source_lang"], report["target_lang"]
    raw = (data / f"test.raw.{src}").read_text(encoding="utf-8")
    (work / f"test.raw.{src}").write_text(raw * copies, encoding="utf-8")
    for lang in (src, tgt):
        pieces = (data / f"test.sp.{lang}").read_text(encoding="utf-8")
        (work / f"test.sp.{lang}").write_text(pieces * copies, encoding="utf-8")
    binarized = work / "data-bin"
    subprocess.run(
        [environment_tool("fairseq-preprocess"), "--source-lang", src, "--target-lang", tgt,
         "--testpref", str(work / "test.sp"), "--srcdict", str(data / f"dict.{src}.txt"),
         "--tgtdict", str(data / f"dict.{tgt}.txt"), "--destdir", str(binarized),
         "--workers", "1"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    shutil.copy(data / "spm.model", binarized / "spm.model")
    return {
        "source": work / f"test.raw.{src}",
        "data": binarized,
        "sentences": raw.count("\n") * copies,
    }


def commands(args: argparse.Namespace, test_set: Dict[str, object], work: Path) -> dict:
    translate = [
        environment_tool("python"), "-m", "fairseq_struct.inference.translate", "--path", str(args.path),
        "--data", str(test_set["data"]), "--input", str(test_set["source"]),
        "--output", str(work / "translate.txt"), "--beam", str(args.beam), "--cpu",
    ]  # fmt: skip
    generate = [
        environment_tool("fairseq-generate"), str(test_set["data"]), "--path", str(args.path),
        "--user-dir", str(REPO / "fairseq_struct"), "--task", "translation_morph",
        "--gen-subset", "test", "--beam", str(args.beam), "--cpu", "--no-progress-bar",
    ]  # fmt: skip
    return {"translate": translate, "generate": generate}


def timed_run(command: List[str], stdout_path: Path, env: Dict[str, str]) -> float:
    started = time.perf_counter()
    with open(stdout_path, "w", encoding="utf-8") as stdout:
        subprocess.run(
            command, stdout=stdout, stderr=subprocess.DEVNULL, env=env, check=True, cwd=REPO
        )
    return time.perf_counter() - started


def differing_lines(work: Path, sentences: int) -> int:
    from fairseq_struct.eval.generate_output import read_hypotheses
    from fairseq_struct.pieces.markers import pieces_to_text

    generated = [pieces_to_text(h) for h in read_hypotheses(str(work / "generate.log"), sentences)]
    translated = (work / "translate.txt").read_text(encoding="utf-8").splitlines()
    return sum(a != b for a, b in zip(generated, translated)) + abs(
        len(generated) - len(translated)
    )


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(name)s: %(message)s")
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), PYTHONWARNINGS="ignore")
    env["PYTHONPATH"] = f"{REPO}{os.pathsep}{env.get('PYTHONPATH', '')}".rstrip(os.pathsep)
    with tempfile.TemporaryDirectory(prefix="bench-translate-") as scratch:
        work = Path(scratch)
        test_set = repeated_test_set(args.data, args.copies, work)
        runs = commands(args, test_set, work)
        seconds: Dict[str, List[float]] = {"translate": [], "generate": []}
        for repeat in range(args.repeats):
            for side, command in runs.items():
                stdout = work / ("generate.log" if side == "generate" else "translate.stdout")
                seconds[side].append(timed_run(command, stdout, env))
                logger.info("run %d, %s: %.2f s", repeat + 1, side, seconds[side][-1])
        differing = differing_lines(work, int(test_set["sentences"]))
    sentences = int(test_set["sentences"])
    median = {side: statistics.median(times) for side, times in seconds.items()}
    rate = {side: sentences / median[side] for side in median}
    ratio = rate["translate"] / rate["generate"]
    print(
        json.dumps(
            {
                "benchmark": "translate_speed",
                "checkpoint": str(args.path),
                "sentences": sentences,
                "beam": args.beam,
                "threads": args.threads,
                "repeats": args.repeats,
                "seconds_translate": round(median["translate"], 3),
                "seconds_generate": round(median["generate"], 3),
                "sentences_per_s_translate": round(rate["translate"], 2),
                "sentences_per_s_generate": round(rate["generate"], 2),
                "ratio": round(ratio, 4),
                "differing_lines": differing,
                "target": TARGET_RATIO,
                "meets_target": ratio >= TARGET_RATIO,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
