"""Copy fairseq-generate's output into its log file and show how far it is (evaluate.sh).

    fairseq-generate ... | fairseq-struct generate-progress LOG --total N

Every input line goes to LOG unchanged; each `S-<id>` line counts one of the N sentences.
fairseq-generate's own bar counts batches (minutes each on a CPU), and only on a terminal.
"""

import argparse
import sys
from typing import BinaryIO, Optional, Sequence

from fairseq_struct.commands import program_name
from fairseq_struct.progress import StageProgress


def copy_with_progress(source: BinaryIO, log: BinaryIO, progress: StageProgress) -> int:
    """Copy `source` to `log` line by line, counting the `S-` lines; the count."""
    sentences = 0
    for line in source:
        log.write(line)
        if line.startswith(b"S-"):
            sentences += 1
            progress.update(1)
    log.flush()
    return sentences


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog=program_name("fairseq_struct.eval.generate_progress"),
        description="Copy fairseq-generate's standard output to a file, showing progress.",
    )
    parser.add_argument("log", help="the file to write the output to")
    parser.add_argument("--total", type=int, help="sentences of the generated subset")
    parser.add_argument(
        "--log-every",
        type=int,
        default=500,
        help="sentences between progress lines when not on a terminal (default 500)",
    )
    args = parser.parse_args(argv)
    with open(args.log, "wb") as log, StageProgress(
        "fairseq-generate", args.total, unit="sentences", log_every=args.log_every
    ) as progress:
        copy_with_progress(sys.stdin.buffer, log, progress)
    return 0


if __name__ == "__main__":
    from fairseq_struct.cli_logging import configure_logging

    configure_logging()
    sys.exit(main())
