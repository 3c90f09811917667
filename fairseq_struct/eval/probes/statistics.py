"""The vector arithmetic and statistics of the probes: cosine similarity, the analogy query
V(a) - V(b) + V(c), its answer among a context's words and how far that answer stands out."""

import math
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import torch.nn.functional as F
from scipy import stats
from torch import Tensor

from fairseq_struct.eval.probes.words import turkish_lower

P_VALUE_TEST = "one-sided t prediction test of the best similarity against the other words'"


def cosine(a: Tensor, b: Tensor) -> float:
    return float(F.cosine_similarity(a.double(), b.double(), dim=0))


def analogy_query(a: Tensor, b: Tensor, c: Tensor) -> Tensor:
    """V(query) = V(a) - V(b) + V(c) (thesis 4.4.1.1)."""
    return a - b + c


def outlier_p_value(best: float, others: Sequence[float]) -> Optional[float]:
    """One-sided p-value that `best` is one more draw from the distribution of `others`.

    The other words' similarities are taken as a normal sample of unknown mean and variance;
    for a new draw x, (x - mean) / (sd * sqrt(1 + 1/n)) follows Student's t with n - 1 degrees
    of freedom (the prediction-interval test). A z-score would take the sample mean and sd as
    exact and overstate significance for short contexts. None with fewer than two other words
    or when they all have the same similarity. The best word is chosen as the maximum, so the
    p-value is optimistic; it says how far the answer stands out, not more.
    """
    n = len(others)
    if n < 2:
        return None
    mean = sum(others) / n
    sd = math.sqrt(sum((value - mean) ** 2 for value in others) / (n - 1))
    if sd <= 1e-12 * max(1.0, abs(mean)):  # all equal, up to rounding
        return None
    t = (best - mean) / (sd * math.sqrt(1.0 + 1.0 / n))
    return float(stats.t.sf(t, df=n - 1))


@dataclass(frozen=True)
class AnalogyAnswer:
    word: str
    similarity: float
    p_value: Optional[float]
    compared: int  # candidate words, query words excluded
    ranking: List[Tuple[str, float]]  # every candidate, most similar first


def answer_analogy(
    query: Tensor,
    candidates: Sequence[Tuple[str, Tensor]],
    query_words: Sequence[str],
) -> AnalogyAnswer:
    """The candidate most similar to `query`; every occurrence of a query word is left out."""
    excluded = {turkish_lower(word) for word in query_words}
    scored = [
        (word, cosine(query, vector))
        for word, vector in candidates
        if turkish_lower(word) not in excluded
    ]
    if not scored:
        raise ValueError("no candidate word is left once the query words are excluded")
    ranking = sorted(scored, key=lambda item: -item[1])
    best_word, best = ranking[0]
    others = [similarity for _, similarity in ranking[1:]]
    return AnalogyAnswer(best_word, best, outlier_p_value(best, others), len(scored), ranking)
