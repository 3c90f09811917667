"""Logging for the project's command lines: INFO on standard error, configured first, because
importing fairseq sets the root logger to DEBUG and every library's debug chatter would show."""

import logging
import sys


def configure_logging() -> None:
    logging.basicConfig(
        format="%(asctime)s | %(levelname)s | %(name)s | %(message)s",
        level=logging.INFO,
        stream=sys.stderr,
        force=True,
    )
