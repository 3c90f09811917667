"""Exact match and F1 of extractive QA answers, exactly as SQuAD v1.1's official `evaluate-v1.1.py`.

Its English normalisation is kept, so that numbers compare with published Turkish results:
`str.lower` (not Turkish-aware), ASCII punctuation removed (Turkish ’ « » stay), the articles
a/an/the removed, whitespace collapsed. As in v1.1, two answers that both normalise to "" get
EM 1 but F1 0, and an unanswered question scores 0 (here logged and counted).
"""

import logging
import re
import string
from collections import Counter
from typing import Callable, Dict, Sequence, TypeVar

logger = logging.getLogger(__name__)

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")

Score = TypeVar("Score", bool, float)


def normalize_answer(s: str) -> str:
    """Lower-case, drop ASCII punctuation and the articles a/an/the, collapse whitespace."""
    text = "".join(character for character in s.lower() if character not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match_score(prediction: str, ground_truth: str) -> bool:
    return normalize_answer(prediction) == normalize_answer(ground_truth)


def f1_score(prediction: str, ground_truth: str) -> float:
    """Harmonic mean of the precision and recall of the normalised tokens (a multiset overlap)."""
    prediction_tokens = normalize_answer(prediction).split()
    ground_truth_tokens = normalize_answer(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0.0
    precision = num_same / len(prediction_tokens)
    recall = num_same / len(ground_truth_tokens)
    return 2 * precision * recall / (precision + recall)


def best_over_ground_truths(
    metric: Callable[[str, str], Score], prediction: str, ground_truths: Sequence[str]
) -> Score:
    """The best score of `prediction` against any of the annotators' answers."""
    if not ground_truths:
        raise ValueError("a question needs at least one ground-truth answer")
    return max(metric(prediction, ground_truth) for ground_truth in ground_truths)


def squad_scores(
    predictions: Dict[str, str], answers: Dict[str, Sequence[str]]
) -> Dict[str, float]:
    """Corpus exact match and F1 (means over the questions of `answers`, ×100).

    Returns:
        {"exact_match", "f1", "questions", "unanswered"}: the two scores in [0, 100], the number
        of questions and how many of them had no prediction (scored 0).

    Raises:
        ValueError: no questions, or a question without ground-truth answers.
    """
    if not answers:
        raise ValueError("no questions to score: the gold answers are empty")
    exact_match = f1 = 0.0
    unanswered = 0
    for question, ground_truths in answers.items():
        if not ground_truths:
            raise ValueError(f"question {question!r} has no ground-truth answer")
        if question not in predictions:
            logger.warning("Unanswered question %s will receive score 0.", question)
            unanswered += 1
            continue
        prediction = predictions[question]
        exact_match += best_over_ground_truths(exact_match_score, prediction, ground_truths)
        f1 += best_over_ground_truths(f1_score, prediction, ground_truths)
    return {
        "exact_match": 100.0 * exact_match / len(answers),
        "f1": 100.0 * f1 / len(answers),
        "questions": len(answers),
        "unanswered": unanswered,
    }
