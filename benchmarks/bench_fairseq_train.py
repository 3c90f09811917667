"""Whole fairseq-train runs: updates/s of fairseq's own update against the project's.

`python benchmarks/bench_fairseq_train.py --device cuda --dtype bf16 --max-tokens 4096` (`--tiny`:
a smoke run on the CPU) prints one JSON line: the `stock` and `project` runs' timed updates/s and
`ratio` (project / stock). What is timed: benchmarks/README.md#bench_fairseq_trainpy.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List

import torch
from fairseq.data import Dictionary, indexed_dataset

REPO_ROOT = Path(__file__).resolve().parent.parent

# fairseq-train with the update of `stock` or `project` (argv[1]) and argv[2] = the update after
# which timing starts; writes {"updates": N, "seconds": S} (timed updates) to argv[3].
_TIMED_TRAIN = """
import json
import sys
import time

import torch
from fairseq.trainer import Trainer
from fairseq_cli.train import cli_main

from fairseq_struct.fixes.stock_update import restore_stock_updates

update, skip, out_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
del sys.argv[1:4]
if update == "stock":
    restore_stock_updates()
marks = {}
train_step = Trainer.train_step


def timed_train_step(self, samples, raise_oom=False):
    output = train_step(self, samples, raise_oom)
    done = self.get_num_updates()
    if done == skip or done == self.cfg.optimization.max_update:
        if self.cuda:
            torch.cuda.synchronize()
        marks.setdefault(done, time.perf_counter())
    return output


Trainer.train_step = timed_train_step
cli_main()
with open(out_path, "w", encoding="utf-8") as out:
    ends = sorted(marks)
    json.dump({"updates": ends[-1] - ends[0], "seconds": marks[ends[-1]] - marks[ends[0]]}, out)
"""

OPTIMIZER_FLAGS = {
    "adam": ["--optimizer", "adam", "--adam-betas", "(0.9, 0.98)", "--lr", "0.0005"],
    "adafactor": ["--optimizer", "adafactor", "--lr", "0.003"],  # scripts/train-en-tr.sh
}
PRECISION_FLAGS = {"bf16": ["--bf16"], "fp16": ["--fp16"], "fp32": []}


def write_synthetic_data(directory: Path, args: argparse.Namespace) -> None:
    """train and valid splits of random sentence pairs, binarized as fairseq-preprocess does
    (mmap), with the joined dictionary as dict.en.txt and dict.tr.txt."""
    dictionary = Dictionary()
    for i in range(args.vocab_size - len(dictionary)):
        dictionary.add_symbol(f"w{i}", n=args.vocab_size - i)  # counts only order the file
    for lang in ("en", "tr"):
        dictionary.save(str(directory / f"dict.{lang}.txt"))
    generator = torch.Generator().manual_seed(1)
    for split, pairs in (("train", args.pairs), ("valid", 8)):
        for lang in ("en", "tr"):
            prefix = directory / f"{split}.en-tr.{lang}"
            builder = indexed_dataset.make_builder(
                f"{prefix}.bin", impl="mmap", vocab_size=len(dictionary)
            )
            for _ in range(pairs):
                tokens = torch.randint(
                    dictionary.nspecial, len(dictionary), (args.sentence_len - 1,),
                    generator=generator,
                )  # fmt: skip
                builder.add_item(torch.cat([tokens, torch.tensor([dictionary.eos()])]))
            builder.finalize(f"{prefix}.idx")


def train_args(data: Path, args: argparse.Namespace) -> List[str]:
    flags = [
        str(data), "--user-dir", str(REPO_ROOT / "fairseq_struct"), "--task", "translation",
        "--source-lang", "en", "--target-lang", "tr", "--arch", args.arch,
        "--share-all-embeddings", "--criterion", "label_smoothed_cross_entropy",
        "--label-smoothing", "0.1", *OPTIMIZER_FLAGS[args.optimizer],
        "--lr-scheduler", "inverse_sqrt", "--warmup-updates", "100", "--clip-norm", "0.0",
        "--max-tokens", str(args.max_tokens), "--max-update", str(args.updates),
        "--disable-validation", "--no-save", "--log-format", "simple", "--log-interval", "10",
        "--num-workers", str(args.num_workers), "--seed", "1", *PRECISION_FLAGS[args.dtype],
    ]  # fmt: skip
    if args.device == "cpu":
        flags.append("--cpu")
        if args.dtype == "fp16":
            flags.append("--fp16-no-flatten-grads")  # fairseq flattens on the CUDA device only
    if args.tiny:
        flags += ["--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "64"]
        flags += ["--encoder-ffn-embed-dim", "128", "--encoder-attention-heads", "2"]
        flags += ["--decoder-embed-dim", "64", "--decoder-ffn-embed-dim", "128"]
        flags += ["--decoder-attention-heads", "2"]
    return flags


def timed_run(update: str, data: Path, work: Path, args: argparse.Namespace) -> Dict[str, Any]:
    script = work / "timed_train.py"
    script.write_text(_TIMED_TRAIN, encoding="utf-8")
    out = work / f"{update}.json"
    command = [args.python, str(script), update, str(args.skip), str(out), *train_args(data, args)]
    result = subprocess.run(command, cwd=work, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"fairseq-train ({update}) failed:\n{result.stderr[-3000:]}")
    timed = json.loads(out.read_text(encoding="utf-8"))
    return {
        "timed_updates": timed["updates"],
        "seconds": round(timed["seconds"], 3),
        "updates_per_s": round(timed["updates"] / timed["seconds"], 3),
    }


def parse_args(argv: List[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cuda")
    parser.add_argument("--dtype", choices=list(PRECISION_FLAGS), default="bf16")
    parser.add_argument("--optimizer", choices=list(OPTIMIZER_FLAGS), default="adam")
    parser.add_argument("--arch", default="tp_transformer_base")
    parser.add_argument("--max-tokens", type=int, default=4096, help="tokens per batch")
    parser.add_argument("--sentence-len", type=int, default=30, help="tokens per sentence")
    parser.add_argument("--updates", type=int, default=60, help="updates of each run")
    parser.add_argument("--skip", type=int, default=10, help="updates before timing starts")
    parser.add_argument("--vocab-size", type=int, default=32000)
    parser.add_argument("--num-workers", type=int, default=1, help="fairseq's data loaders")
    parser.add_argument(
        "--tiny", action="store_true", help="a 1-layer model, few updates: a smoke run (CPU)"
    )
    parser.add_argument(
        "--python", default=sys.executable, help="the interpreter of the runs (default: this)"
    )
    args = parser.parse_args(argv)
    if args.tiny:
        args.updates, args.skip, args.max_tokens, args.vocab_size = 6, 2, 64, 200
        args.sentence_len = 8
    if not 0 < args.skip < args.updates:
        parser.error("--skip: between 0 and --updates")
    sentences_per_batch = max(1, args.max_tokens // args.sentence_len)
    args.pairs = sentences_per_batch * (args.updates + 2)  # one epoch covers the run
    return args


def main(argv: List[str]) -> int:
    args = parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no CUDA device")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    with tempfile.TemporaryDirectory(prefix="bench-fairseq-train-") as temporary:
        data, work = Path(temporary, "data"), Path(temporary)
        data.mkdir()
        write_synthetic_data(data, args)
        runs = {update: timed_run(update, data, work, args) for update in ("stock", "project")}
    ratio = runs["project"]["updates_per_s"] / runs["stock"]["updates_per_s"]
    print(
        json.dumps(
            {
                "benchmark": "fairseq_train",
                "device": args.device,
                "device_name": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
                "arch": args.arch,
                "dtype": args.dtype,
                "optimizer": args.optimizer,
                "max_tokens": args.max_tokens,
                "sentence_len": args.sentence_len,
                "updates": args.updates,
                "timed_from_update": args.skip,
                "tiny": args.tiny,
                "stock": runs["stock"],
                "project": runs["project"],
                "ratio": round(ratio, 4),
                "ratio_is": "updates/s of project / updates/s of stock",
            }
        ),
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
