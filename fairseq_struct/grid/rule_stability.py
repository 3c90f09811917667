"""How stable a grid's comparison is under one way of evaluating its runs (a checkpoint rule,
a tuned length penalty): across seeds, do the systems' differences keep their sign, and how
much does each system's score move? Every pair of systems is compared, over the seeds both
finished, on one metric's test scores (system -> seed -> score)."""

import itertools
import statistics
from typing import Dict, List, Optional, Tuple

Scores = Dict[str, Dict[int, float]]  # system -> seed -> score


def _differences(scores: Scores) -> List[List[float]]:
    """Each pair of systems' differences, one per seed both have."""
    found = []
    for first, second in itertools.combinations(scores, 2):
        seeds = sorted(set(scores[first]) & set(scores[second]))
        found.append([scores[first][seed] - scores[second][seed] for seed in seeds])
    return found


def _sign(value: float) -> int:
    return (value > 0) - (value < 0)


def sign_agreement(scores: Scores) -> Optional[float]:
    """Over every pair of systems and every two seeds both finished: the fraction in which the
    two seeds' differences have the same sign (a tie is its own sign). None without two
    shared seeds for any pair."""
    agreeing, compared = 0, 0
    for differences in _differences(scores):
        for one, other in itertools.combinations(differences, 2):
            compared += 1
            agreeing += _sign(one) == _sign(other)
    return agreeing / compared if compared else None


def consistent_pairs(scores: Scores) -> Tuple[int, int]:
    """(pairs of systems whose difference has one sign in every shared seed, pairs with two
    shared seeds or more)."""
    compared = [differences for differences in _differences(scores) if len(differences) >= 2]
    consistent = sum(len({_sign(value) for value in differences}) == 1 for differences in compared)
    return consistent, len(compared)


def mean_seed_std(scores: Scores) -> Optional[float]:
    """The sample standard deviation of a system's score over its seeds, averaged over the
    systems with two seeds or more; None without any."""
    spreads = [
        statistics.stdev(by_seed.values()) for by_seed in scores.values() if len(by_seed) >= 2
    ]
    return statistics.fmean(spreads) if spreads else None
