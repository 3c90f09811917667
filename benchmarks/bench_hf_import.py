"""Seconds and peak memory of `python -m fairseq_struct.hf_import` of a Hugging Face BERT against
transformers' `BertForPreTraining.from_pretrained` of the same directory.

`.venv/bin/python benchmarks/bench_hf_import.py` prints one JSON line: the weights' size, each
side's seconds and peak RSS, and the import's peak RSS over the weights (`rss_ratio_to_weights`).
Figures: benchmarks/README.md#bench_hf_importpy.
"""

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from child_peak_rss import peak_kib, wrapped

RSS_GOAL = 2.5
LOAD_IN_TRANSFORMERS = (
    "import sys; from transformers import BertForPreTraining; "
    "BertForPreTraining.from_pretrained(sys.argv[1])"
)


def save_random_bert(directory: Path, args: argparse.Namespace) -> int:
    """A random BertForPreTraining and its tokenizer; returns the weights' bytes."""
    import torch
    from transformers import BertConfig, BertForPreTraining, BertTokenizer

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    half = (args.vocab_size - len(specials)) // 2
    pieces = [f"p{i}" for i in range(half)]
    pieces += [f"##p{i}" for i in range(args.vocab_size - len(specials) - half)]
    (directory / "vocab.txt").write_text("\n".join(specials + pieces) + "\n", encoding="utf-8")
    tokenizer = BertTokenizer(vocab=str(directory / "vocab.txt"), do_lower_case=False)
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=args.vocab_size,
        hidden_size=args.hidden_size,
        num_hidden_layers=args.layers,
        num_attention_heads=max(1, args.hidden_size // 64),
        intermediate_size=4 * args.hidden_size,
    )
    model = BertForPreTraining(config)
    model.save_pretrained(str(directory))
    tokenizer.save_pretrained(str(directory))
    return sum(p.numel() * p.element_size() for p in model.parameters())


def measure(command: list) -> tuple:
    """(seconds, peak RSS in MiB) of a new process (its peak taken by child_peak_rss's wrapper:
    this process holds transformers and a model, which a child's own figure would carry)."""
    with tempfile.TemporaryDirectory() as scratch:
        peak_file = Path(scratch) / "peak_rss"
        started = time.monotonic()
        process = subprocess.run(
            wrapped(command, peak_file), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        seconds = time.monotonic() - started
        if process.returncode != 0:
            errors = process.stderr.decode(errors="replace")
            raise SystemExit(f"{' '.join(command)} failed:\n{errors[-2000:]}")
        return seconds, peak_kib(peak_file) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--hidden-size", type=int, default=768)
    parser.add_argument("--vocab-size", type=int, default=32000)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-hf-import-"))
    try:
        source = work / "bert"
        source.mkdir()
        weight_bytes = save_random_bert(source, args)
        imports, loads = [], []
        for repeat in range(args.repeats):
            out = work / f"imported-{repeat}"
            imports.append(
                measure([sys.executable, "-m", "fairseq_struct.hf_import", str(source), str(out)])
            )
            shutil.rmtree(out)
            loads.append(measure([sys.executable, "-c", LOAD_IN_TRANSFORMERS, str(source)]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    import_seconds, import_rss = min(s for s, _ in imports), min(r for _, r in imports)
    load_seconds, load_rss = min(s for s, _ in loads), min(r for _, r in loads)
    weights_mib = weight_bytes / 2**20
    rss_ratio = round(import_rss / weights_mib, 3)
    print(
        json.dumps(
            {
                "benchmark": "hf_import",
                "model": {
                    "layers": args.layers,
                    "hidden_size": args.hidden_size,
                    "vocab_size": args.vocab_size,
                    "parameters": weight_bytes // 4,
                },
                "weights_mib": round(weights_mib, 1),
                "import_s": round(import_seconds, 2),
                "import_peak_rss_mib": round(import_rss, 1),
                "transformers_load_s": round(load_seconds, 2),
                "transformers_peak_rss_mib": round(load_rss, 1),
                "rss_ratio_to_weights": rss_ratio,
                "seconds_ratio_to_transformers": round(import_seconds / load_seconds, 3),
                "rss_goal": RSS_GOAL,
                "meets_rss_goal": rss_ratio <= RSS_GOAL,
                "repeats": args.repeats,
            }
        )
    )


if __name__ == "__main__":
    main()
