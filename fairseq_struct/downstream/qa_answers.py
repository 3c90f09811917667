"""From start/end logits to answer text (SQuAD v1.1 decoding, as BERT's run_squad does).

A window's answer is the span (i, j) of context tokens with i ≤ j < i + max_answer_length that
maximises start_logit[i] + end_logit[j]; its text is the context between the first character of
unit i and the last character of unit j. A question's answer is that of its best-scoring window.
"""

from typing import Any, Dict, List, Sequence, Tuple

import torch
from torch import Tensor


def best_spans(
    start_logits: Tensor, end_logits: Tensor, context_mask: Tensor, max_answer_length: int
) -> Tuple[Tensor, Tensor, Tensor]:
    """(B,) score, start and end token of the best span of each row, inside `context_mask`."""
    start_logits = start_logits.float().masked_fill(~context_mask, float("-inf"))
    end_logits = end_logits.float().masked_fill(~context_mask, float("-inf"))
    length = start_logits.size(1)
    positions = torch.arange(length, device=start_logits.device)
    offset = positions.unsqueeze(0) - positions.unsqueeze(1)  # j - i
    allowed = (offset >= 0) & (offset < max_answer_length)
    scores = start_logits.unsqueeze(2) + end_logits.unsqueeze(1)
    scores = scores.masked_fill(~allowed, float("-inf")).flatten(1)
    best, flat = scores.max(dim=1)
    return best, flat // length, flat % length


def context_mask(src_tokens: Tensor, windows: Sequence[Dict[str, Any]]) -> Tensor:
    """(B, T) True on each window's context units."""
    mask = torch.zeros_like(src_tokens, dtype=torch.bool)
    for row, window in enumerate(windows):
        start = window["context_offset"]
        mask[row, start : start + len(window["spans"])] = True
    return mask


def answer_text(window: Dict[str, Any], start: int, end: int) -> str:
    spans = window["spans"]
    first, last = start - window["context_offset"], end - window["context_offset"]
    if not 0 <= first <= last < len(spans):
        return ""
    return window["context"][spans[first][0] : spans[last][1]]


def window_answers(
    src_tokens: Tensor,
    start_logits: Tensor,
    end_logits: Tensor,
    windows: Sequence[Dict[str, Any]],
    max_answer_length: int,
) -> List[Tuple[str, float, str]]:
    """(question id, score, answer text) of every window of a batch."""
    mask = context_mask(src_tokens, windows)
    scores, starts, ends = best_spans(start_logits, end_logits, mask, max_answer_length)
    return [
        (window["question"], score, answer_text(window, start, end))
        for window, score, start, end in zip(
            windows, scores.tolist(), starts.tolist(), ends.tolist()
        )
    ]


def best_answers(answers: Sequence[Tuple[str, float, str]]) -> Dict[str, str]:
    """Question id → the text of its best-scoring window."""
    best: Dict[str, Tuple[float, str]] = {}
    for question, score, text in answers:
        if question not in best or score > best[question][0]:
            best[question] = (score, text)
    return {question: text for question, (_, text) in best.items()}
