"""`StageProgress`: lines done, lines/s and ETA of one long stage of a command line.

A tqdm bar on a terminal; elsewhere (a log file, a SLURM job) a log line every `log_every` items
with the same figures, since a bar's carriage returns would fill the log.
"""

import logging
import sys
import time
from types import TracebackType
from typing import Optional, Type

from tqdm import tqdm

logger = logging.getLogger(__name__)

DEFAULT_LOG_EVERY = 1_000_000


class StageProgress:
    """Use as a context manager; `update(n)` after each n items done."""

    def __init__(
        self,
        stage: str,
        total: Optional[int] = None,
        unit: str = "lines",
        log_every: int = DEFAULT_LOG_EVERY,
    ) -> None:
        self.stage, self.total, self.unit, self.log_every = stage, total, unit, log_every
        self.done = 0
        self._next_log = log_every
        self._started = time.monotonic()
        self._ended: Optional[float] = None
        self._bar = tqdm(
            total=total,
            desc=stage,
            unit=f" {unit}",
            unit_scale=True,
            dynamic_ncols=True,
            disable=not sys.stderr.isatty(),
            file=sys.stderr,
        )

    def __enter__(self) -> "StageProgress":
        return self

    def __exit__(
        self,
        error_type: Optional[Type[BaseException]],
        error: Optional[BaseException],
        trace: Optional[TracebackType],
    ) -> None:
        self._ended = time.monotonic()
        self._bar.close()
        if error_type is None and self._bar.disable:
            logger.info("%s: %s", self.stage, self._figures())

    @property
    def seconds(self) -> float:
        return (self._ended or time.monotonic()) - self._started

    def update(self, count: int = 1) -> None:
        self.done += count
        self._bar.update(count)
        if self._bar.disable and self.done >= self._next_log:
            self._next_log = (self.done // self.log_every + 1) * self.log_every
            logger.info("%s: %s", self.stage, self._figures())

    def _figures(self) -> str:
        rate = self.done / max(self.seconds, 1e-9)
        figures = f"{self.done:,}"
        if self.total is not None:
            figures += f"/{self.total:,}"
        figures += f" {self.unit}, {rate:,.0f} {self.unit}/s"
        if self.total is not None and self._ended is None and rate > 0:
            eta = max(self.total - self.done, 0) / rate
            figures += f", ETA {time.strftime('%H:%M:%S', time.gmtime(eta))}"
        elif self._ended is not None:
            figures += f", {self.seconds:.1f} s"
        return figures
