"""Model inputs of the three kinds of fine-tuning, built from cut units (design.md §5.4).

Token ids follow fairseq's RoBERTa conventions: `<s>` first, `</s>` after each segment, so a
question-context pair is `<s> question </s> context </s>`. A word's label sits on its first unit
(`IGNORED_LABEL` elsewhere); a sentence too long for the encoder is split into windows of whole
words. QA windows start `doc_stride` units apart (BERT's SQuAD recipe) and point at `<s>` when
the answer is not wholly inside.
"""

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from fairseq.data import Dictionary

from fairseq_struct.morph.units import UnitCutter

# Label symbol of the units that get no prediction (fairseq's <pad>, which every dictionary has).
IGNORED_LABEL = "<pad>"


@dataclass
class CutCounts:
    """What had to be shortened to fit the encoder (for the report)."""

    truncated_sequences: int = 0
    split_sentences: int = 0
    extra_windows: int = 0
    truncated_words: int = 0
    unknown_units: int = 0

    def as_dict(self) -> Dict[str, int]:
        return dict(self.__dict__)


def encode_units(units: Sequence[str], dictionary: Dictionary, counts: CutCounts) -> List[int]:
    ids = [dictionary.index(unit) for unit in units]
    counts.unknown_units += sum(1 for index in ids if index == dictionary.unk())
    return ids


def sentence_item(
    words_units: Sequence[Sequence[str]],
    dictionary: Dictionary,
    max_length: int,
    counts: CutCounts,
) -> List[int]:
    """`units </s>` of one text, cut so that `<s> units </s>` fits `max_length` tokens (the end
    of a long text goes). fairseq's `sentence_prediction` prepends `<s>` (`--init-token 0`)."""
    ids = encode_units([unit for word in words_units for unit in word], dictionary, counts)
    if len(ids) + 2 > max_length:
        counts.truncated_sequences += 1
        ids = ids[: max_length - 2]
    return ids + [dictionary.eos()]


@dataclass
class TokenWindow:
    """Consecutive words of one sentence that fit the encoder, with one label per unit."""

    sentence: int
    first_word: int
    words: int
    tokens: List[int]
    labels: List[str]  # aligned with tokens; IGNORED_LABEL where no word starts


def token_windows(
    sentence_index: int,
    words_units: Sequence[Sequence[str]],
    word_labels: Sequence[str],
    dictionary: Dictionary,
    max_length: int,
    counts: CutCounts,
) -> List[TokenWindow]:
    """The windows of one sentence: `<s>` + whole words' units + `</s>`, each ≤ max_length."""
    budget = max_length - 2
    if budget < 1:
        raise ValueError(f"max_length {max_length} leaves no room for a word")
    windows: List[TokenWindow] = []
    current: Optional[TokenWindow] = None
    for position, (units, label) in enumerate(zip(words_units, word_labels)):
        if len(units) > budget:
            counts.truncated_words += 1
            units = units[:budget]
        if current is None or len(current.tokens) - 1 + len(units) > budget:
            current = TokenWindow(sentence_index, position, 0, [dictionary.bos()], [IGNORED_LABEL])
            windows.append(current)
        current.tokens.extend(encode_units(units, dictionary, counts))
        current.labels.extend([label] + [IGNORED_LABEL] * (len(units) - 1))
        current.words += 1
    for window in windows:
        window.tokens.append(dictionary.eos())
        window.labels.append(IGNORED_LABEL)
    if len(windows) > 1:
        counts.split_sentences += 1
        counts.extra_windows += len(windows) - 1
    return windows


@dataclass
class QAFeature:
    """One window of a question's context: tokens, target span and where the context sits."""

    question_id: str
    tokens: List[int]
    context_offset: int  # token position of the window's first context unit
    unit_spans: List[Tuple[int, int]]  # character span in the context of each window unit
    start: int = 0  # token positions of the answer's first and last unit; 0: not in the window
    end: int = 0
    context: int = 0  # index of the question's context in `QAWindows.contexts`


@dataclass
class CutContext:
    """A context cut once for all its questions."""

    ids: List[int]
    spans: List[Tuple[int, int]]


def cut_context(context: str, cutter: UnitCutter, dictionary: Dictionary, counts: CutCounts):
    units, spans = cutter.cut_text(context)
    flat = [unit for word in units for unit in word]
    return CutContext(encode_units(flat, dictionary, counts), spans)


def answer_units(spans: Sequence[Tuple[int, int]], start: int, end: int) -> Tuple[int, int]:
    """First and last unit overlapping the character range [start, end), or (-1, -1)."""
    first = last = -1
    for index, (unit_start, unit_end) in enumerate(spans):
        if unit_end > start and unit_start < end:
            if first < 0:
                first = index
            last = index
    return first, last


def qa_features(
    question_id: str,
    question_ids: Sequence[int],
    context: CutContext,
    answer: Optional[Tuple[int, int]],
    dictionary: Dictionary,
    max_length: int,
    doc_stride: int,
    max_query_length: int,
    counts: CutCounts,
) -> List[QAFeature]:
    """The windows of one question; `answer` is its (start, end) character range, if any."""
    if len(question_ids) > max_query_length:
        counts.truncated_sequences += 1
        question_ids = question_ids[:max_query_length]
    prefix = [dictionary.bos()] + list(question_ids) + [dictionary.eos()]
    room = max_length - len(prefix) - 1
    if room < 1:
        raise ValueError(
            f"max length {max_length} leaves no room for the context after a question of "
            f"{len(question_ids)} units: lower --max-query-length"
        )
    first, last = answer_units(context.spans, *answer) if answer else (-1, -1)
    features = []
    window_start = 0
    while True:
        window_end = min(window_start + room, len(context.ids))
        tokens = prefix + context.ids[window_start:window_end] + [dictionary.eos()]
        feature = QAFeature(
            question_id, tokens, len(prefix), list(context.spans[window_start:window_end])
        )
        if first >= window_start and 0 <= last < window_end:
            feature.start = len(prefix) + first - window_start
            feature.end = len(prefix) + last - window_start
        features.append(feature)
        if window_end >= len(context.ids):
            break
        window_start += min(doc_stride, room)
    if len(features) > 1:
        counts.split_sentences += 1
        counts.extra_windows += len(features) - 1
    return features


@dataclass
class QAWindows:
    """The windows of a list of questions, each distinct context cut once."""

    contexts: List[str] = field(default_factory=list)
    windows: List[QAFeature] = field(default_factory=list)


def question_windows(
    examples: Sequence[Any],
    cutter: UnitCutter,
    dictionary: Dictionary,
    max_length: int,
    doc_stride: int,
    max_query_length: int,
    counts: CutCounts,
) -> QAWindows:
    """The windows of SQuAD questions (`readers.QAExample`); the target is the first answer."""
    result = QAWindows()
    cut: Dict[str, Tuple[int, CutContext]] = {}
    questions = cutter.cut([example.question.split() for example in examples])
    for example, question_units in zip(examples, questions):
        if example.context not in cut:
            cut[example.context] = (
                len(result.contexts),
                cut_context(example.context, cutter, dictionary, counts),
            )
            result.contexts.append(example.context)
        context_index, context = cut[example.context]
        answer = example.answers[0] if example.answers else None
        span = (answer.start, answer.start + len(answer.text)) if answer else None
        question_ids = encode_units(
            [unit for word in question_units for unit in word], dictionary, counts
        )
        for window in qa_features(
            str(example.id),
            question_ids,
            context,
            span,
            dictionary,
            max_length,
            doc_stride,
            max_query_length,
            counts,
        ):
            window.context = context_index
            result.windows.append(window)
    return result
