"""The console scripts that `pip install` puts on PATH, one for each command line of the package.

`fairseq-struct-prepare ...` runs the same `main` as `python -m fairseq_struct.morph.prepare ...`,
with the project's logging set first (`fixes.cli_logging`): every script calls `run`, which
finds the module by the name the script was called as. The module is imported only when its
command runs, so each command loads what it needs and no more. setup.py's `console_scripts`
lists every name of `COMMANDS`; tests/test_console_scripts.py checks the two agree.
"""

import importlib
import os
import shutil
import sys
from pathlib import Path
from typing import Dict

from fairseq_struct.fixes.cli_logging import configure_logging

# console script name -> module whose `main(argv=None)` it runs
COMMANDS: Dict[str, str] = {
    "fairseq-struct-prepare": "fairseq_struct.morph.prepare",
    "fairseq-struct-prepare-mlm": "fairseq_struct.masked_lm.prepare",
    "fairseq-struct-prepare-downstream": "fairseq_struct.downstream.prepare",
    "fairseq-struct-predict": "fairseq_struct.downstream.predict",
    "fairseq-struct-encoder-options": "fairseq_struct.downstream.encoder_options",
    "fairseq-struct-seeds": "fairseq_struct.downstream.seeds",
    "fairseq-struct-finetune-summary": "fairseq_struct.downstream.demo_summary",
    "fairseq-struct-corpora": "fairseq_struct.corpora.catalog",
    "fairseq-struct-clean-corpus": "fairseq_struct.corpora.clean_corpus",
    "fairseq-struct-splits": "fairseq_struct.corpora.splits",
    "fairseq-struct-demo-corpus": "fairseq_struct.demo_data.synthetic_en_tr",
    "fairseq-struct-demo-labelled": "fairseq_struct.demo_data.synthetic_labelled_tr",
    "fairseq-struct-translate": "fairseq_struct.inference.translate",
    "fairseq-struct-average-checkpoints": "fairseq_struct.inference.average_checkpoints",
    "fairseq-struct-score": "fairseq_struct.eval.score",
    "fairseq-struct-generate-output": "fairseq_struct.eval.generate_output",
    "fairseq-struct-generate-progress": "fairseq_struct.eval.generate_progress",
    "fairseq-struct-density-buckets": "fairseq_struct.eval.density_buckets",
    "fairseq-struct-corpus-stats": "fairseq_struct.eval.corpus_stats",
    "fairseq-struct-complexity": "fairseq_struct.eval.complexity",
    "fairseq-struct-aso": "fairseq_struct.eval.almost_stochastic_order",
    "fairseq-struct-probes": "fairseq_struct.eval.probes",
    "fairseq-struct-mlm-summary": "fairseq_struct.eval.masked_lm_summary",
    "fairseq-struct-zemberek-coverage": "fairseq_struct.eval.zemberek_coverage",
    "fairseq-struct-export-hf": "fairseq_struct.export.hf",
    "fairseq-struct-import-hf": "fairseq_struct.hf_import",
    "fairseq-struct-grid-translation": "fairseq_struct.grid.translation",
    "fairseq-struct-grid-encoders": "fairseq_struct.grid.encoders",
    "fairseq-struct-grid-evaluate-run": "fairseq_struct.grid.run_evaluation",
}


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
    """What a usage line calls the running command: its console script, or `python -m module`."""
    invoked = os.path.basename(sys.argv[0])
    return invoked if invoked in COMMANDS else f"python -m {module}"


def run() -> int:
    """The entry point of every console script: the `main` of the command it was called as."""
    command = os.path.basename(sys.argv[0])
    if command not in COMMANDS:
        raise SystemExit(f"{command}: not a fairseq-struct command (one of: {', '.join(COMMANDS)})")
    configure_logging()
    status = importlib.import_module(COMMANDS[command]).main()
    return status if isinstance(status, int) else 0  # some mains return their result
