"""Input lines of fairseq-struct translate: read strictly, never dropped, cut where too long."""

import io
import logging

import pytest

from fairseq_struct.corpus_io import CorpusError
from fairseq_struct.inference.source_lines import cut_line, read_source_lines, sentences


def words(text: str) -> list:
    """A stand-in encoder with one piece a word, so piece counts are easy to see."""
    return ["\u2581" + word for word in text.split()]


def test_lines_are_whitespace_normalised_and_empty_lines_kept():
    stream = io.BytesIO(b"  Hello   world \r\n\n \t \nlast")
    assert list(read_source_lines(stream, "in.en")) == ["Hello world", "", "", "last"]


def test_invalid_utf8_names_the_line():
    stream = io.BytesIO(b"fine\nbad \xff here\n")
    with pytest.raises(CorpusError, match=r"^in\.en:2: invalid UTF-8 at byte 4 of the line"):
        list(read_source_lines(stream, "in.en"))


def test_reserved_marks_name_the_line():
    stream = io.BytesIO("ok\nkit\uffedap\n".encode())
    with pytest.raises(CorpusError, match=r"^in\.en:2: contains the morpheme boundary mark"):
        list(read_source_lines(stream, "in.en"))


def test_sentences_split_after_sentence_ends_only():
    line = 'He came. "Why?" she asked! Then (quietly.) left; Dr.X stayed'
    assert sentences(line) == [
        "He came.",
        '"Why?"',
        "she asked!",
        "Then (quietly.)",
        "left;",
        "Dr.X stayed",
    ]


def test_a_line_that_fits_is_one_part():
    source = cut_line(7, "a b c. d e", words, max_pieces=5, name="in")
    assert source.number == 7 and source.parts == [words("a b c. d e")]
    assert source.truncated_pieces == 0


def test_an_empty_line_has_no_parts():
    assert cut_line(1, "", words, max_pieces=5, name="in").parts == []


def test_a_long_line_is_cut_into_its_sentences():
    line = "a b c. d e. f g h i. j."
    source = cut_line(3, line, words, max_pieces=5, name="in")
    assert source.parts == [words("a b c."), words("d e."), words("f g h i."), words("j.")]
    assert [piece for part in source.parts for piece in part] == words(line)  # nothing lost


def test_a_sentence_too_long_alone_is_truncated_with_a_warning(caplog):
    line = "a b c d e f g. h i."
    with caplog.at_level(logging.WARNING):
        source = cut_line(12, line, words, max_pieces=4, name="news.en")
    assert source.parts == [words("a b c d"), words("h i.")]
    assert source.truncated_pieces == 3
    assert "news.en:12:" in caplog.text and "3 pieces were left out" in caplog.text
