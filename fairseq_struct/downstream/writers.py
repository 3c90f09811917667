"""Writers of downstream predictions in the formats their inputs came in.

Tagging predictions go into a copy of the input file (through each `readers.TaggedSentence`'s
`path` and `lines`) that keeps every byte it does not change, so that it lines up with the gold
file for any CoNLL evaluation script. Every file is written atomically.
"""

from pathlib import Path
from typing import Dict, List, Sequence, Tuple, Union

from fairseq_struct.corpus_io import atomic_write_bytes, atomic_write_json, atomic_write_lines
from fairseq_struct.downstream.readers import (
    CONLLU_COLUMNS,
    DownstreamDataError,
    TaggedSentence,
    read_text_lines,
)

PathLike = Union[str, Path]


def _raw_lines(path: PathLike) -> List[bytes]:
    """The file's lines as bytes, each with its own ending (LF, CRLF or none for the last)."""
    read_text_lines(path)  # rejects invalid UTF-8 with file, line and byte, as the readers did
    data = Path(path).read_bytes()
    lines = data.split(b"\n")
    ends = [b"\n"] * (len(lines) - 1) + [b""]
    if lines[-1] == b"":  # the newline that ends the last line
        lines.pop()
        ends.pop()
    return [line + end for line, end in zip(lines, ends)]


def _split_ending(raw: bytes) -> Tuple[bytes, bytes]:
    """(content, ending) of one raw line, the ending being b"\\r\\n", b"\\n" or b""."""
    for ending in (b"\r\n", b"\n"):
        if raw.endswith(ending):
            return raw[: -len(ending)], ending
    return raw, b""


def _predicted_lines(
    sentences: Sequence[TaggedSentence], predictions: Sequence[Sequence[str]], total: int
) -> Dict[int, str]:
    """Line number -> predicted tag, after checking that predictions and sentences agree."""
    if len(predictions) != len(sentences):
        raise DownstreamDataError(
            f"{len(predictions)} predicted tag sequences for {len(sentences)} sentences"
        )
    path = sentences[0].path
    tags: Dict[int, str] = {}
    for sentence, predicted in zip(sentences, predictions):
        first = f"{sentence.path}:{sentence.lines[0]}"
        if sentence.path != path:
            raise DownstreamDataError(
                f"{first}: sentence from another file than {path}: write one file at a time"
            )
        if len(predicted) != len(sentence.words):
            raise DownstreamDataError(
                f"{first}: {len(predicted)} predicted tags for a sentence of "
                f"{len(sentence.words)} words"
            )
        for number, tag in zip(sentence.lines, predicted):
            if not tag or any(char.isspace() for char in tag):
                raise DownstreamDataError(
                    f"{sentence.path}:{number}: predicted tag {tag!r} is empty or holds "
                    "whitespace, which would break the columns"
                )
            if not 1 <= number <= total:
                raise DownstreamDataError(
                    f"{sentence.path}:{number}: no such line, the file has {total}: it changed "
                    "since it was read"
                )
            tags[number] = tag
    return tags


def _tagged_lines(
    sentences: Sequence[TaggedSentence], predictions: Sequence[Sequence[str]]
) -> Tuple[str, List[bytes], Dict[int, str], Dict[int, str]]:
    """The input file of the (non-empty) `sentences`: its path, its raw lines, and line number
    -> predicted tag and -> the word read from that line."""
    path = sentences[0].path
    raw_lines = _raw_lines(path)
    tags = _predicted_lines(sentences, predictions, len(raw_lines))
    words = {n: w for s in sentences for n, w in zip(s.lines, s.words)}
    return path, raw_lines, tags, words


def _check_word(path: str, number: int, line: str, word: str) -> None:
    # The lines are found by number, so a file edited since reading would get shifted tags.
    if word not in line:
        raise DownstreamDataError(
            f"{path}:{number}: the word {word!r} read from this line is not on it any more: "
            "the file changed since it was read"
        )


def write_conll_predictions(
    sentences: Sequence[TaggedSentence],
    predictions: Sequence[Sequence[str]],
    out_path: PathLike,
) -> None:
    """The input CoNLL file again, with the predicted tag as a last tab-separated column.

    Word lines get `<TAB>tag` (after removing trailing tabs); all other lines (blank, comment, -DOCSTART-) are copied. The
    input is `sentences[0].path`, and `sentences` must be all the sentences read from it.
    """
    if not sentences:
        raise DownstreamDataError(f"no sentence to write predictions for into {out_path}")
    path, raw_lines, tags, words = _tagged_lines(sentences, predictions)
    out: List[bytes] = []
    for number, raw in enumerate(raw_lines, start=1):
        if number in tags:
            content, ending = _split_ending(raw)
            _check_word(path, number, content.decode("utf-8"), words[number])
            # A trailing tab the reader removed (an empty column) is not kept before the tag.
            raw = content.rstrip(b"\t") + b"\t" + tags[number].encode("utf-8") + ending
        out.append(raw)
    atomic_write_bytes(out_path, b"".join(out))


def write_conllu_predictions(
    sentences: Sequence[TaggedSentence],
    predictions: Sequence[Sequence[str]],
    out_path: PathLike,
    column: str = "upos",
) -> None:
    """The input CoNLL-U file again, with `column` (UPOS) of each word line predicted.

    Everything else is byte-identical: comments, multi-word token ranges, empty nodes, the other
    columns. Every word line of the input (integer id) must have a prediction.
    """
    if not sentences:
        raise DownstreamDataError(f"no sentence to write predictions for into {out_path}")
    if column not in CONLLU_COLUMNS:
        raise DownstreamDataError(f"{column!r} is not a CoNLL-U column")
    index = CONLLU_COLUMNS.index(column)
    path, raw_lines, tags, words = _tagged_lines(sentences, predictions)
    out: List[bytes] = []
    for number, raw in enumerate(raw_lines, start=1):
        content, ending = _split_ending(raw)
        if number in tags:
            fields = content.decode("utf-8").split("\t")
            if len(fields) != len(CONLLU_COLUMNS) or fields[1] != words[number]:
                raise DownstreamDataError(
                    f"{path}:{number}: not the word line of {words[number]!r} that was read: "
                    "the file changed since it was read"
                )
            fields[index] = tags[number]
            raw = "\t".join(fields).encode("utf-8") + ending
        elif content[:1].isdigit() and content.split(b"\t", 1)[0].isdigit():
            raise DownstreamDataError(
                f"{path}:{number}: word line without a prediction: pass every sentence read "
                "from the file"
            )
        out.append(raw)
    atomic_write_bytes(out_path, b"".join(out))


def write_labels(labels: Sequence[str], out_path: PathLike) -> None:
    """One predicted label a line, in the order of the input texts."""
    for number, label in enumerate(labels, start=1):
        if not label or "\n" in label or "\r" in label:
            raise DownstreamDataError(
                f"{out_path}:{number}: label {label!r} is empty or holds a line break"
            )
    atomic_write_lines(out_path, labels)


def write_squad_predictions(predictions: Dict[str, str], out_path: PathLike) -> None:
    """SQuAD's predictions.json: question id -> answer text, UTF-8 (not \\u-escaped)."""
    atomic_write_json(out_path, {str(key): value for key, value in predictions.items()})
