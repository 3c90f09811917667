"""The front door: `fairseq-struct COMMAND [ARGS...]`, the one console script `pip install` puts
on PATH.

Each command runs its module's `main`, as `python -m` does, with the project's logging set
first; the module is imported only when the command runs, so `--help` and the commands that need
no model start without torch or fairseq.
"""

import importlib
import os
import shutil
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

PROGRAM = "fairseq-struct"

# group -> (command, module whose `main(argv=None)` it runs, what it does)
GROUPS: Dict[str, List[Tuple[str, str, str]]] = {
    "prepare data": [
        (
            "corpora",
            "fairseq_struct.corpora.catalog",
            "list the papers' corpora and make them plain text",
        ),
        (
            "datasets",
            "fairseq_struct.downstream_sets.cli",
            "the encoder papers' downstream data sets, fetched and converted",
        ),
        (
            "clean-corpus",
            "fairseq_struct.corpora.clean_corpus",
            "clean a parallel corpus as Moses' clean-corpus-n does",
        ),
        (
            "splits",
            "fairseq_struct.corpora.splits",
            "seeded subsets of a corpus, each cut into train/valid/test",
        ),
        (
            "prepare",
            "fairseq_struct.morph.prepare",
            "parallel text to SentencePiece text for fairseq-preprocess",
        ),
        (
            "prepare-mlm",
            "fairseq_struct.masked_lm.prepare",
            "monolingual text to masked-LM pretraining input",
        ),
        (
            "prepare-downstream",
            "fairseq_struct.downstream.prepare",
            "a labelled data set, binarized for fine-tuning",
        ),
        (
            "demo-corpus",
            "fairseq_struct.demo_data.synthetic_en_tr",
            "the demo's synthetic English-Turkish corpus",
        ),
        (
            "demo-labelled",
            "fairseq_struct.demo_data.synthetic_labelled_tr",
            "the demo's synthetic labelled Turkish",
        ),
    ],
    "translate": [
        (
            "translate",
            "fairseq_struct.inference.translate",
            "translate raw text with a trained model",
        ),
        (
            "average-checkpoints",
            "fairseq_struct.inference.average_checkpoints",
            "average the weights of checkpoints",
        ),
        (
            "generate-output",
            "fairseq_struct.eval.generate_output",
            "hypotheses out of fairseq-generate's output, in order",
        ),
        (
            "generate-progress",
            "fairseq_struct.eval.generate_progress",
            "log fairseq-generate's output and show its progress",
        ),
    ],
    "encoders": [
        (
            "encoder-options",
            "fairseq_struct.downstream.encoder_options",
            "the fairseq-train options that rebuild an encoder",
        ),
        (
            "finetune",
            "fairseq_struct.downstream.finetune",
            "fine-tune an encoder on prepared data, exactly the epochs asked for",
        ),
        (
            "predict",
            "fairseq_struct.downstream.predict",
            "predict and score with a fine-tuned checkpoint",
        ),
        (
            "model-only",
            "fairseq_struct.model_checkpoint",
            "a checkpoint's model without its optimizer state",
        ),
        (
            "seeds",
            "fairseq_struct.downstream.seeds",
            "fine-tune over several seeds: mean and deviation",
        ),
        (
            "finetune-summary",
            "fairseq_struct.downstream.demo_summary",
            "the fine-tuning demo's table",
        ),
        (
            "import-hf",
            "fairseq_struct.hf_import",
            "a Hugging Face encoder as a checkpoint of the plugin",
        ),
        ("export-hf", "fairseq_struct.export.hf", "a checkpoint as a Hugging Face model directory"),
    ],
    "evaluate": [
        (
            "score",
            "fairseq_struct.eval.score",
            "sacreBLEU BLEU, chrF and chrF++ against raw references",
        ),
        (
            "density-buckets",
            "fairseq_struct.eval.density_buckets",
            "BLEU and chrF by morphological density",
        ),
        (
            "corpus-stats",
            "fairseq_struct.eval.corpus_stats",
            "pieces and morphemes per word of a corpus",
        ),
        (
            "complexity",
            "fairseq_struct.eval.complexity",
            "the C_D morphological complexity of a text",
        ),
        (
            "aso",
            "fairseq_struct.eval.almost_stochastic_order",
            "Almost Stochastic Order of two systems over seeds",
        ),
        ("probes", "fairseq_struct.eval.probes", "qualitative probes of a masked-LM encoder"),
        (
            "mlm-summary",
            "fairseq_struct.eval.masked_lm_summary",
            "masked-token accuracy of several models",
        ),
        (
            "zemberek-coverage",
            "fairseq_struct.eval.zemberek_coverage",
            "the share of a Turkish text Zemberek analyses",
        ),
    ],
    "grids": [
        (
            "grid-translation",
            "fairseq_struct.grid.translation",
            "the translation comparison as one command",
        ),
        ("grid-encoders", "fairseq_struct.grid.encoders", "the encoder comparison as one command"),
        (
            "grid-evaluate-run",
            "fairseq_struct.grid.run_evaluation",
            "one run's evaluation in a translation grid",
        ),
    ],
}
COMMANDS: Dict[str, str] = {name: module for rows in GROUPS.values() for name, module, _ in rows}

# How a command's usage line names it: set by `main` for the command it runs.
_invoked_as: Optional[Tuple[str, str]] = None


def usage() -> str:
    lines = [
        f"usage: {PROGRAM} COMMAND [ARGS...]   ({PROGRAM} COMMAND --help for its options)",
        "",
        "Structure-aware translation and encoders for morphologically rich languages. Models "
        "train and",
        "decode with the stock fairseq-train and fairseq-generate, given --user-dir "
        "(the package's directory).",
    ]
    width = max(len(name) for name in COMMANDS)
    for group, rows in GROUPS.items():
        lines += ["", f"{group}:"]
        lines += [f"  {name:<{width}}  {summary}" for name, _, summary in rows]
    return "\n".join(lines) + "\n"


def environment_tool(name: str) -> str:
    """A console script (fairseq-train, torchrun, ...) found as the project's shell scripts find
    it (scripts/lib/tools.sh): in the directory FAIRSEQ_STRUCT_TOOLS names, else beside the
    running interpreter, else on PATH (packages installed elsewhere: `pip install --target`, as
    on the lent GPU machine); the bare name when there is none."""
    for directory in (os.environ.get("FAIRSEQ_STRUCT_TOOLS"), str(Path(sys.executable).parent)):
        if directory and (Path(directory) / name).exists():
            return str(Path(directory) / name)
    return shutil.which(name) or name


def program_name(module: str) -> str:
    """What a usage line calls the running command: `fairseq-struct NAME`, or
    `python -m module`."""
    if _invoked_as is not None and _invoked_as[1] == module:
        return f"{PROGRAM} {_invoked_as[0]}"
    return f"python -m {module}"


def main(argv: Optional[Sequence[str]] = None) -> int:
    """`fairseq-struct COMMAND ARGS...`: the `main` of COMMAND's module on ARGS."""
    global _invoked_as
    arguments = list(sys.argv[1:] if argv is None else argv)
    if not arguments or arguments[0] in ("-h", "--help", "help"):
        sys.stdout.write(usage())
        return 0 if arguments else 2
    name, rest = arguments[0], arguments[1:]
    if name not in COMMANDS:
        sys.stderr.write(f"{PROGRAM}: {name!r} is not a command\n\n{usage()}")
        return 2
    from fairseq_struct import deferred_imports
    from fairseq_struct.cli_logging import configure_logging

    configure_logging()
    deferred_imports.install()
    _invoked_as = (name, COMMANDS[name])
    sys.argv = [f"{PROGRAM} {name}", *rest]  # argparse's default prog is argv[0]
    status = importlib.import_module(COMMANDS[name]).main(rest)
    return status if isinstance(status, int) else 0  # some mains return their result
