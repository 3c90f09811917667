"""Export a checkpoint of the project to a Hugging Face `transformers` model directory.

    fairseq-struct export-hf checkpoints/bert2d/checkpoint_best.pt hf/bert2d

Which checkpoints export, what OUT_DIR holds, the parity check run before writing and how to
load the result: docs/export.md.
"""

import argparse
import json
import sys
from pathlib import Path
from typing import Optional, Sequence


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", type=Path, help="a checkpoint of fairseq-train")
    parser.add_argument("out_dir", type=Path, help="the transformers model directory to write")
    parser.add_argument("--data", help="the run's data directory (default: the checkpoint's)")
    parser.add_argument(
        "--pretraining-data",
        type=Path,
        help="the scripts/prepare-mlm.sh directory of the pretraining run (spm.model, "
        "text/prepare_report.json); default: from the data directory",
    )
    parser.add_argument("--spm-model", type=Path, help="the run's SentencePiece model")
    parser.add_argument(
        "--no-check",
        dest="check",
        action="store_false",
        help="skip comparing fairseq's and the export's outputs before writing",
    )
    parser.add_argument("--overwrite", action="store_true", help="replace files in OUT_DIR")
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    # torch, fairseq and transformers load with the checkpoint, after the arguments.
    from fairseq_struct.export.hf_checkpoint import UnsupportedCheckpoint
    from fairseq_struct.export.hf_directory import MissingExtras, export, require_transformers
    from fairseq_struct.export.hf_parity import ExportMismatch

    try:
        require_transformers()  # before loading fairseq and the checkpoint
        report = export(
            args.checkpoint,
            args.out_dir,
            data=args.data,
            pretraining_data=args.pretraining_data,
            spm_model=args.spm_model,
            check=args.check,
            overwrite=args.overwrite,
        )
    except (
        MissingExtras,
        UnsupportedCheckpoint,
        ExportMismatch,
        FileNotFoundError,
        FileExistsError,
    ) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(json.dumps(report, indent=2))
    print(f"transformers model in {args.out_dir} (load with trust_remote_code=True)")
    return 0


if __name__ == "__main__":
    from fairseq_struct.cli_logging import configure_logging

    configure_logging()
    sys.exit(main())
