"""IOB2 NER tags: parsing, IOB1 repair, the Entity-Fix rule, CSE tagging and entity F1
(Zöllner et al., section 4; design.md §5.4).

A tag is `O`, `B-X` (first token of an entity of type X) or `I-X` (a following token of it); in
IOB2 every entity starts with B-, so an I-X is only allowed after B-X or I-X.
"""

from typing import Dict, List, Optional, Sequence, Set, Tuple

import numpy as np
from seqeval.scheme import IOB2, Tokens

OUTSIDE = "O"


def split_tag(tag: str) -> Tuple[str, str]:
    """("B", "PER") for "B-PER", ("I", "PER") for "I-PER", ("O", "") for "O".

    Only the first hyphen separates: "B-LOC-deriv" is ("B", "LOC-deriv").
    """
    if tag == OUTSIDE:
        return OUTSIDE, ""
    if len(tag) > 2 and tag[:2] in ("B-", "I-"):
        return tag[0], tag[2:]
    raise ValueError(f"tag {tag!r} is not IOB: expected 'O', 'B-<type>' or 'I-<type>'")


def entity_types(labels: Sequence[str]) -> List[str]:
    """The entity types of IOB labels, each once, in the order of their first label."""
    types: Dict[str, None] = {}
    for label in labels:
        _, kind = split_tag(label)
        if kind:
            types.setdefault(kind)
    return list(types)


def _forbidden(previous: Optional[str], tag: str) -> bool:
    """Whether `tag` is an I-X that may not follow `previous` (None: the sentence start)."""
    prefix, kind = split_tag(tag)
    if prefix != "I":
        return False
    if previous is None:
        return True
    previous_prefix, previous_kind = split_tag(previous)
    return previous_prefix == OUTSIDE or previous_kind != kind


def iob1_to_iob2(tags: Sequence[str]) -> List[str]:
    """IOB1 (or any IOB) tags as IOB2: an I-X that continues no X entity becomes B-X."""
    converted: List[str] = []
    for tag in tags:
        if _forbidden(converted[-1] if converted else None, tag):
            tag = f"B-{split_tag(tag)[1]}"
        converted.append(tag)
    return converted


# Prefixes of the schemes with explicit ends: IOBES/BIOES (S- single, E- end) and BILOU (U- unit,
# L- last), written as the IOB2 prefix of the same token.
_END_SCHEME_PREFIXES = {"S": "B", "U": "B", "E": "I", "L": "I"}


def to_iob2(tags: Sequence[str]) -> List[str]:
    """Tags of any IOB-family scheme (IOB1, IOB2, IOBES/BIOES, BILOU) as IOB2.

    S-X and U-X become B-X, E-X and L-X become I-X; then, as in `iob1_to_iob2`, an I-X that
    continues no X entity starts one. The entities are unchanged in every scheme. Raises
    ValueError naming a tag of none of these schemes.
    """
    converted = []
    for tag in tags:
        prefix = tag[:1]
        if len(tag) > 2 and tag[1] == "-" and prefix in _END_SCHEME_PREFIXES:
            tag = f"{_END_SCHEME_PREFIXES[prefix]}-{tag[2:]}"
        split_tag(tag)
        converted.append(tag)
    return iob1_to_iob2(converted)


def is_iob_tag(tag: str) -> bool:
    """Whether `to_iob2` takes `tag`: O, or a B-/I- (IOB), S-/E- (IOBES) or U-/L- (BILOU) tag."""
    try:
        to_iob2([tag])
    except ValueError:
        return False
    return True


def count_iob2_violations(tags: Sequence[str]) -> int:
    """The number of I-X tags that follow neither B-X nor I-X (or open the sentence)."""
    return sum(
        _forbidden(tags[position - 1] if position else None, tag)
        for position, tag in enumerate(tags)
    )


def entity_fix(tags: Sequence[str]) -> List[str]:
    """The Entity-Fix rule of Zöllner et al., section 4.3, left to right on the fixed sequence.

    A forbidden I-X (its fixed predecessor is neither B-X nor I-X) takes the predecessor's
    tag, as I- if that was B- (so after O it becomes O); an I-X opening the sentence becomes
    B-X. Table 5: I-Per O O B-Loc I-Org I-Org I-Loc -> B-Per O O B-Loc I-Loc I-Loc I-Loc.
    Valid IOB2 is returned unchanged, and the output is always valid IOB2.

    The changed tags belonged to no (strict IOB2) entity, but section 4.3's conclusion that
    E-F1 "can never decrease" does not follow: a fixed tag extends the entity before it, so a
    correct B-LOC followed by a forbidden I-PER (gold B-LOC O) becomes a wrong B-LOC I-LOC.
    """
    fixed: List[str] = []
    for tag in tags:
        if _forbidden(fixed[-1] if fixed else None, tag):
            if not fixed:
                tag = f"B-{split_tag(tag)[1]}"
            else:
                previous_prefix, previous_kind = split_tag(fixed[-1])
                tag = OUTSIDE if previous_prefix == OUTSIDE else f"I-{previous_kind}"
        fixed.append(tag)
    return fixed


# ----------------------------------------------------------------------------- CSE tagging


def cse_targets(tags: Sequence[str]) -> Tuple[List[int], List[int], List[str]]:
    """Start, end and class targets of CSE tagging (Zöllner et al., Table 4) for IOB2 tags.

    start = 1 on the first token of an entity, end = 1 on its last token (both on a
    one-token entity), class = its type without B-/I-, or "O". Raises ValueError on an I-X
    that continues no X entity: repair IOB1 input with `iob1_to_iob2` first.
    """
    starts, ends, classes = [], [], []
    for position, tag in enumerate(tags):
        prefix, kind = split_tag(tag)
        if _forbidden(tags[position - 1] if position else None, tag):
            raise ValueError(
                f"tag {position} ({tag!r}) continues no {kind} entity: expected IOB2 tags"
            )
        following = tags[position + 1] if position + 1 < len(tags) else OUTSIDE
        # The next tag is checked in its turn, so an I- there continues this entity.
        continued = following.startswith("I-")
        starts.append(int(prefix == "B"))
        ends.append(int(prefix != OUTSIDE and not continued))
        classes.append(kind or OUTSIDE)
    return starts, ends, classes


def _cse_spans(
    start_probs: np.ndarray, end_probs: np.ndarray, threshold: float
) -> List[Tuple[int, int]]:
    """(first, last) token of every entity, pairing the start and end markers left to right.

    A marker is a probability above `threshold`. A start followed by another start before any
    end gets the most probable end from itself up to the token before the next start (or up
    to the last token if no marker follows); an end with no open start gets the most probable
    start from the token after the previous entity (or token 0) up to itself. A token that is
    both a start and an end is a one-token entity. Ties go to the first token.
    """
    is_start = start_probs > threshold
    is_end = end_probs > threshold
    spans = []
    open_start: Optional[int] = None
    after_previous = 0
    for position in range(len(start_probs)):
        if is_start[position]:
            if open_start is not None:
                missing_end = open_start + int(np.argmax(end_probs[open_start:position]))
                spans.append((open_start, missing_end))
            open_start = position
        if is_end[position]:
            if open_start is None:
                window = start_probs[after_previous : position + 1]
                open_start = after_previous + int(np.argmax(window))
            spans.append((open_start, position))
            open_start, after_previous = None, position + 1
    if open_start is not None:
        spans.append((open_start, open_start + int(np.argmax(end_probs[open_start:]))))
    return spans


def cse_decode(
    start_probs: Sequence[float],
    end_probs: Sequence[float],
    class_probs: Sequence[Sequence[float]],
    class_names: Sequence[str],
    threshold: float = 0.5,
) -> List[str]:
    """IOB2 tags of one sentence from CSE's three heads (Zöllner et al., 4.1; design.md §5.4).

    start_probs, end_probs (N,): sigmoid outputs; class_probs (N, C): softmax over
    `class_names` ("O" among them). Markers and missing ones are paired by `_cse_spans`; the
    class of an entity is the argmax of the class probabilities averaged over its tokens (start
    and end included), taken over the entity classes only: the markers have already decided
    that the span is an entity, the class head only names its type (an "O" would leave the
    markers unexplained). Spans never overlap and each is B-X I-X..., so the tags are
    consistent by construction.
    """
    starts = np.asarray(start_probs, dtype=np.float64)
    ends = np.asarray(end_probs, dtype=np.float64)
    if len(starts) == 0:
        return []
    classes = np.asarray(class_probs, dtype=np.float64)
    if ends.shape != starts.shape or classes.shape != (len(starts), len(class_names)):
        raise ValueError(
            f"CSE outputs disagree: start {starts.shape}, end {ends.shape}, class "
            f"{classes.shape}; expected ({len(starts)},), ({len(starts)},) and "
            f"({len(starts)}, {len(class_names)})"
        )
    entity_columns = [k for k, name in enumerate(class_names) if name != OUTSIDE]
    if not entity_columns:
        raise ValueError(f"class names {list(class_names)} hold no entity class")
    tags = [OUTSIDE] * len(starts)
    for first, last in _cse_spans(starts, ends, threshold):
        averaged = classes[first : last + 1, entity_columns].mean(axis=0)
        kind = class_names[entity_columns[int(np.argmax(averaged))]]
        tags[first] = f"B-{kind}"
        tags[first + 1 : last + 1] = [f"I-{kind}"] * (last - first)
    return tags


# ----------------------------------------------------------------------------- entity F1


def _entities(tags: Sequence[str], strict: bool) -> Set[tuple]:
    for tag in tags:
        split_tag(tag)
    if strict:
        return {entity.to_tuple() for entity in Tokens(list(tags), scheme=IOB2).entities}
    # Here, not at the top: seqeval.metrics imports scikit-learn, which only the scoring of
    # entities needs.
    from seqeval.metrics.sequence_labeling import get_entities

    return set(get_entities(list(tags)))


def entity_counts(
    gold_tags: Sequence[str], pred_tags: Sequence[str], strict: bool = False
) -> Tuple[int, int, int]:
    """(true positives, predicted entities, gold entities) of one sentence.

    Entities are seqeval's: by default its default (conlleval) mode, where an I-X that
    continues no X entity starts one, as in seqeval's `f1_score(gold, pred)` the paper's E-F1
    uses; with `strict`, seqeval's strict IOB2 mode, where such an I-X belongs to no entity
    (`f1_score(..., mode="strict", scheme=IOB2)`). The two agree on valid IOB2.
    """
    if len(gold_tags) != len(pred_tags):
        raise ValueError(f"{len(gold_tags)} gold tags but {len(pred_tags)} predicted tags")
    gold = _entities(gold_tags, strict)
    predicted = _entities(pred_tags, strict)
    return len(gold & predicted), len(predicted), len(gold)


def entity_f1(
    gold: Sequence[Sequence[str]], pred: Sequence[Sequence[str]], strict: bool = False
) -> Dict[str, float]:
    """Micro entity precision, recall and F1 (fractions) over sentences, and their counts.

    Bit for bit seqeval's micro scores in the same mode: ill-defined ratios are 0.
    """
    if len(gold) != len(pred):
        raise ValueError(f"{len(gold)} gold sentences but {len(pred)} predicted sentences")
    true_positives = predicted = relevant = 0
    for gold_tags, pred_tags in zip(gold, pred):
        counts = entity_counts(gold_tags, pred_tags, strict)
        true_positives += counts[0]
        predicted += counts[1]
        relevant += counts[2]
    precision = true_positives / predicted if predicted else 0.0
    recall = true_positives / relevant if relevant else 0.0
    f1 = 2.0 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "true_positives": true_positives,
        "predicted": predicted,
        "gold": relevant,
    }
