"""Logging for the project's command lines (`fairseq-struct COMMAND`, `python -m fairseq_struct...`).

Importing fairseq sets the root logger to DEBUG with a handler of its own, so every library's
debug chatter (matplotlib's font search, Morfessor's per-word steps) would reach the terminal.
The command lines set it to INFO first.
"""

import logging
import sys


def configure_logging() -> None:
    logging.basicConfig(
        format="%(asctime)s | %(levelname)s | %(name)s | %(message)s",
        level=logging.INFO,
        stream=sys.stderr,
        force=True,
    )
