"""The lines a user gives `fairseq-struct translate`, read and cut as the model can take them.

Every input line gives one output line. A line longer than the model's source positions is cut
after sentence ends and its sentences translated one by one (SentencePiece never makes a piece
across a space, so cutting loses nothing); a sentence that alone does not fit is truncated.
"""

import logging
import re
from dataclasses import dataclass
from typing import BinaryIO, Callable, Iterator, List

from fairseq_struct.corpus_io import check_reserved, iter_stream_lines, normalize_whitespace

logger = logging.getLogger(__name__)

# A sentence ends at one of these marks (closing quotes and brackets may follow) and a space.
_SENTENCE_END = re.compile(r"(?<=[.!?…;][\"'”’»)\]])\s|(?<=[.!?…;])\s")


@dataclass
class SourceLine:
    """One input line: where it was, and the pieces of each part to translate."""

    number: int  # 1-based line number in the input
    parts: List[List[str]]  # no parts: an empty line
    truncated_pieces: int = 0  # pieces left out because a sentence did not fit


def read_source_lines(stream: BinaryIO, name: str) -> Iterator[str]:
    """The whitespace-normalised lines of a binary stream; `CorpusError` names `name:line:`
    at invalid UTF-8 or a reserved mark."""
    for number, line in enumerate(iter_stream_lines(stream, name), start=1):
        check_reserved(name, number, line)
        yield normalize_whitespace(line)


def sentences(line: str) -> List[str]:
    """The sentences of a whitespace-normalised line, split after sentence-ending marks."""
    return [sentence for sentence in _SENTENCE_END.split(line) if sentence]


def cut_line(
    number: int, line: str, encode: Callable[[str], List[str]], max_pieces: int, name: str
) -> SourceLine:
    """The parts of a whitespace-normalised line: the line, or its sentences if it has more than
    `max_pieces` pieces (each then at most `max_pieces`).

    Args:
        number: the line's number in the input, for the warning of a truncated sentence.
        encode: a sentence's pieces (SentencePiece, as the preparation encoded the source).
        max_pieces: the most pieces a part may have (the model's source positions minus the
            end-of-sentence token).
        name: the input's name, for the warning.
    """
    if not line:
        return SourceLine(number, [])
    pieces = encode(line)
    if len(pieces) <= max_pieces:
        return SourceLine(number, [pieces])
    parts: List[List[str]] = []
    truncated = 0
    for sentence in sentences(line):
        sentence_pieces = encode(sentence)
        if len(sentence_pieces) > max_pieces:
            truncated += len(sentence_pieces) - max_pieces
            sentence_pieces = sentence_pieces[:max_pieces]
        parts.append(sentence_pieces)
    if truncated:
        logger.warning(
            "%s:%d: a sentence of this line has more pieces than the model's %d source "
            "positions and no sentence end to cut at; %d pieces were left out of its "
            "translation",
            name,
            number,
            max_pieces,
            truncated,
        )
    return SourceLine(number, parts, truncated)
