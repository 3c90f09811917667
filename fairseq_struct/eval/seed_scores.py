"""Scores of one system over seeds: their mean and sample standard deviation (the seeds
command's summaries and Almost Stochastic Order's systems share it)."""

import statistics
from typing import List


class SeedScores:
    """Mean and spread of `scores`, one per seed (also of `almost_stochastic_order`'s systems)."""

    scores: List[float]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.scores)

    @property
    def std(self) -> float:
        """Sample standard deviation (ddof = 1), 0 for a single seed."""
        return statistics.stdev(self.scores) if len(self.scores) > 1 else 0.0
