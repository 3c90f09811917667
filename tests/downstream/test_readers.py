"""Downstream readers: every bad input is an error naming file and line, or counted."""

import json
import re
from dataclasses import asdict
from pathlib import Path

import pytest

from fairseq_struct.downstream.readers import (
    Answer,
    DownstreamDataError,
    TaggedSentence,
    TextExample,
    read_classification,
    read_conll,
    read_conllu,
    read_squad,
)

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


def write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8"))
    return path


# ------------------------------------------------------------------------------ classification


def test_class_files_take_the_label_from_the_extension_and_count_skips(tmp_path):
    pos = write(tmp_path / "train.pos", "güzel film\n\n  harika \n")
    neg = write(tmp_path / "train.neg", "kötü\n")
    examples, report = read_classification([pos, neg])
    assert examples == [
        TextExample("güzel film", "pos", str(pos), 1),
        TextExample("harika", "pos", str(pos), 3),
        TextExample("kötü", "neg", str(neg), 1),
    ]
    assert report.items == 3
    assert report.skipped == {"empty line": 1}
    assert report.repaired == {"leading or trailing whitespace stripped": 1}
    assert report.examples == [
        f"{pos}:2: empty line",
        f"{pos}:3: leading or trailing whitespace stripped",
    ]
    json.dumps(asdict(report))


def test_class_files_take_given_labels(tmp_path):
    a = write(tmp_path / "a.txt", "x\n")
    b = write(tmp_path / "b.txt", "y\n")
    examples, _ = read_classification([a, b], labels=["olumlu", "olumsuz"])
    assert [e.label for e in examples] == ["olumlu", "olumsuz"]
    with pytest.raises(DownstreamDataError, match="1 labels .* for 2 class files"):
        read_classification([a, b], labels=["olumlu"])


def test_tsv_lines_give_text_and_label(tmp_path):
    path = write(tmp_path / "train.tsv", "güzel film\tpos\n\nkötü\tneg\n")
    examples, report = read_classification([path], tab_separated=True)
    assert [(e.text, e.label, e.line) for e in examples] == [
        ("güzel film", "pos", 1),
        ("kötü", "neg", 3),
    ]
    assert report.skipped == {"empty line": 1}


@pytest.mark.parametrize("line, tabs", [("güzel film pos", 0), ("güzel\tfilm\tpos", 2)])
def test_tsv_line_without_exactly_one_tab_is_an_error(tmp_path, line, tabs):
    path = write(tmp_path / "train.tsv", f"iyi\tpos\n{line}\n")
    with pytest.raises(DownstreamDataError) as error:
        read_classification([path], tab_separated=True)
    assert str(error.value) == (
        f"{path}:2: expected text<TAB>label with exactly one tab, found {tabs} tabs"
    )


def test_invalid_utf8_names_file_line_and_byte(tmp_path):
    path = tmp_path / "train.pos"
    path.write_bytes("iyi\nçok k\xf6t\xfc".encode("utf-8") + b" \xff\n")
    with pytest.raises(DownstreamDataError) as error:
        read_classification([path])
    # "çok kötü " is 12 bytes in UTF-8; line 2 starts at byte 4 of the file.
    assert str(error.value).startswith(
        f"{path}:2: invalid UTF-8 at byte 12 of the line (byte 16 of the file)"
    )


def test_bom_and_crlf_are_tolerated(tmp_path):
    path = tmp_path / "train.pos"
    path.write_bytes("\ufeffiyi\r\nçok iyi\r\n".encode("utf-8"))
    examples, report = read_classification([path])
    assert [e.text for e in examples] == ["iyi", "çok iyi"]
    assert report.repaired == {}


# ------------------------------------------------------------------------------ CoNLL


def test_conll_reads_sentences_with_line_numbers_and_skips_docstart(tmp_path):
    path = write(
        tmp_path / "train.conll",
        "-DOCSTART-\tO\n\nAhmet\tB-PER\nAnkara'ya\tB-LOC\ngitti\tO\n\n\nO\tO\n",
    )
    sentences, report = read_conll(path)
    assert sentences == [
        TaggedSentence(
            ("Ahmet", "Ankara'ya", "gitti"), ("B-PER", "B-LOC", "O"), str(path), (3, 4, 5)
        ),
        TaggedSentence(("O",), ("O",), str(path), (8,)),
    ]
    assert report.items == 2
    assert report.skipped == {"-DOCSTART- line": 1, "repeated blank line": 1}


def test_conll_whitespace_separated_columns(tmp_path):
    path = write(tmp_path / "train.conll", "Ahmet  B-PER\ngitti O\n")
    sentences, _ = read_conll(path)
    assert sentences[0].words == ("Ahmet", "gitti")
    assert sentences[0].tags == ("B-PER", "O")


def test_conll_wrong_column_count_names_line_and_counts(tmp_path):
    path = write(tmp_path / "train.conll", "Ahmet\tB-PER\nda\tO\n\ngitti\tO\tfazla\n")
    with pytest.raises(DownstreamDataError) as error:
        read_conll(path)
    assert str(error.value) == (
        f"{path}:4: 3 columns where the file's word lines have 2 (2 of 3 word lines of the file "
        "have 2 tab-separated columns, the first on line 1)"
    )


def test_conll_layout_is_what_most_lines_have_and_the_odd_line_is_named(tmp_path):
    # The first line is the odd one: the error must name it, not the lines read after it.
    path = write(tmp_path / "train.conll", "Ahmet\tB-PER\tfazla\ngitti\tO\n\nO\tO\nda\tO\n")
    with pytest.raises(DownstreamDataError) as error:
        read_conll(path)
    assert str(error.value).startswith(
        f"{path}:1: 3 columns where the file's word lines have 2 (3 of 4 word lines"
    )


def test_conll_space_separated_line_in_a_tab_separated_file_is_named(tmp_path):
    path = write(tmp_path / "train.conll", "Ahmet\tB-PER\ngitti O\nda\tO\n")
    with pytest.raises(DownstreamDataError, match=re.escape(f"{path}:2: 1 columns where")):
        read_conll(path)


def test_conll_trailing_tabs_are_removed_and_counted(tmp_path):
    path = write(tmp_path / "train.conll", "Ahmet\tB-PER\t\ngitti\tO\n\nO\tO\t\t\n")
    sentences, report = read_conll(path)
    assert [sentence.tags for sentence in sentences] == [("B-PER", "O"), ("O",)]
    assert report.repaired == {"trailing tab removed": 2}


def test_conll_column_count_can_be_required(tmp_path):
    path = write(tmp_path / "train.conll", "Ahmet\tNNP\tB-PER\n")
    with pytest.raises(
        DownstreamDataError,
        match=r":1: 3 columns where the file's word lines have 2 \(tab-separated, as asked for\)",
    ):
        read_conll(path, columns=2)
    sentences, _ = read_conll(path, columns=3)
    assert sentences[0].tags == ("B-PER",)


@pytest.mark.parametrize("token", ["", " "])
def test_conll_empty_or_whitespace_token_is_an_error(tmp_path, token):
    path = write(tmp_path / "train.conll", f"Ahmet\tB-PER\n{token}\tO\n")
    with pytest.raises(DownstreamDataError) as error:
        read_conll(path)
    assert str(error.value) == (f"{path}:2: empty or whitespace-only token {token!r} in column 1")


GERMEVAL = (
    "#\thttp://de.wikipedia.org/wiki/Manfred_Korfmann [2009-10-17]\n"
    "1\tAufgrund\tO\tO\n"
    "2\tseiner\tO\tO\n"
    "3\tBerliner\tB-ORGpart\tB-LOC\n"
    "4\tUniversität\tI-ORGpart\tO\n"
    "\n"
    "#\tn-tv.de vom 26.02.2005 [2005-02-26]\n"
    "1\t#\tO\tO\n"
)


def test_germeval_trailing_tab_on_one_line_is_repaired_not_misread(tmp_path):
    # As in the published NER-de-test.tsv: one word line ends in a tab. The file must still be
    # read as GermEval (the `#` lines comments, the outer tags), CRLF line ends and all.
    text = GERMEVAL.replace("1\t#\tO\tO\n", '1\t"\tO\tO\t\n2\t#\tO\tO\n')
    path = write(tmp_path / "NER-de-test.tsv", text.replace("\n", "\r\n"))
    sentences, report = read_conll(path)
    assert sentences[1] == TaggedSentence(('"', "#"), ("O", "O"), str(path), (8, 9))
    assert sentences[0].tags == ("O", "O", "B-ORGpart", "I-ORGpart")
    assert report.repaired == {"trailing tab removed": 1}
    assert report.skipped == {"comment line": 2}


def test_germeval_line_that_is_not_germeval_is_named_with_the_evidence(tmp_path):
    path = write(tmp_path / "NER-de-dev.tsv", GERMEVAL.replace("2\tseiner\tO\tO", "2\tseiner\tO"))
    with pytest.raises(DownstreamDataError) as error:
        read_conll(path)
    assert str(error.value) == (
        f"{path}:3: 3 columns where the file's word lines have 4 (read as GermEval 2014 "
        "(index<TAB>token<TAB>outer<TAB>inner): 4 of 5 word lines have that layout)"
    )


def test_germeval_is_detected_and_reads_the_outer_column_skipping_comments(tmp_path):
    path = write(tmp_path / "NER-de-train.tsv", GERMEVAL)
    sentences, report = read_conll(path)
    assert sentences == [
        TaggedSentence(
            ("Aufgrund", "seiner", "Berliner", "Universität"),
            ("O", "O", "B-ORGpart", "I-ORGpart"),
            str(path),
            (2, 3, 4, 5),
        ),
        TaggedSentence(("#",), ("O",), str(path), (8,)),
    ]
    assert report.skipped == {"comment line": 2}
    inner, _ = read_conll(path, tag_column=4)
    assert inner[0].tags == ("O", "O", "B-LOC", "O")


def test_germeval_index_must_count_the_words(tmp_path):
    path = write(tmp_path / "NER-de-train.tsv", GERMEVAL.replace("3\tBerliner", "1\tBerliner"))
    with pytest.raises(
        DownstreamDataError, match=re.escape(f"{path}:4: GermEval index '1', expected 3")
    ):
        read_conll(path)


def test_hash_is_an_ordinary_token_outside_germeval(tmp_path):
    path = write(tmp_path / "train.conll", "#\tO\nbugün\tO\n")
    sentences, _ = read_conll(path)
    assert sentences[0].words == ("#", "bugün")


def test_conll_tag_column_out_of_range_is_an_error(tmp_path):
    path = write(tmp_path / "train.conll", "Ahmet\tB-PER\n")
    with pytest.raises(DownstreamDataError, match="tag column 3 .* the file has 2 columns"):
        read_conll(path, tag_column=3)


# ------------------------------------------------------------------------------ CoNLL-U

CONLLU = (
    "# sent_id = 1\n"
    "# text = Okula gittim.\n"
    "1\tOkula\tokul\tNOUN\tNoun\t_\t2\tobl\t_\t_\n"
    "2\tgittim\tgit\tVERB\tVerb\t_\t0\troot\t_\tSpaceAfter=No\n"
    "3\t.\t.\tPUNCT\tPunc\t_\t2\tpunct\t_\t_\n"
    "\n"
    "# sent_id = 2\n"
    "1-2\tEvdeki\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "1\tEvde\tev\tNOUN\tNoun\t_\t2\tnmod\t_\t_\n"
    "2\tki\tki\tADP\tAdp\t_\t3\tcase\t_\t_\n"
    "2.1\tvar\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "3\tkitap\tkitap\tNOUN\tNoun\t_\t0\troot\t_\t_\n"
    "\n"
)


def test_conllu_skips_and_counts_multiword_ranges_and_empty_nodes(tmp_path):
    path = write(tmp_path / "tr_imst-ud-dev.conllu", CONLLU)
    sentences, report = read_conllu(path)
    assert sentences == [
        TaggedSentence(("Okula", "gittim", "."), ("NOUN", "VERB", "PUNCT"), str(path), (3, 4, 5)),
        TaggedSentence(("Evde", "ki", "kitap"), ("NOUN", "ADP", "NOUN"), str(path), (9, 10, 12)),
    ]
    assert report.skipped == {"multi-word token range": 1, "empty node": 1}
    assert report.examples == [f"{path}:8: multi-word token range", f"{path}:11: empty node"]


def test_conllu_other_column(tmp_path):
    path = write(tmp_path / "dev.conllu", CONLLU)
    sentences, _ = read_conllu(path, column="xpos")
    assert sentences[0].tags == ("Noun", "Verb", "Punc")


@pytest.mark.parametrize(
    "upos, message",
    [
        ("_", "no UPOS for word 'gittim' (the column is '_' or empty)"),
        ("VRB", "'VRB' is not a universal POS tag"),
    ],
)
def test_conllu_missing_or_unknown_upos_names_the_line(tmp_path, upos, message):
    path = write(
        tmp_path / "dev.conllu", CONLLU.replace("gittim\tgit\tVERB", f"gittim\tgit\t{upos}")
    )
    with pytest.raises(DownstreamDataError) as error:
        read_conllu(path)
    assert str(error.value).startswith(f"{path}:4: {message}")


def test_conllu_line_with_wrong_column_count_names_the_line(tmp_path):
    path = write(tmp_path / "dev.conllu", CONLLU.replace("\tSpaceAfter=No", ""))
    with pytest.raises(DownstreamDataError, match=re.escape(f"{path}:4: 9 tab-separated columns")):
        read_conllu(path)


def test_conllu_line_numbers_survive_bom_crlf_and_extra_blank_lines(tmp_path):
    path = tmp_path / "dev.conllu"
    path.write_bytes(
        ("\ufeff" + CONLLU.replace("\n\n# sent_id = 2", "\n\n\n# sent_id = 2"))
        .replace("\n", "\r\n")
        .encode()
    )
    sentences, _ = read_conllu(path)
    assert [s.lines for s in sentences] == [(3, 4, 5), (10, 11, 13)]


# ------------------------------------------------------------------------------ SQuAD


def squad(questions, context="Ankara Türkiye'nin başkentidir."):
    return {"data": [{"title": "Ankara", "paragraphs": [{"context": context, "qas": questions}]}]}


def write_json(path: Path, value) -> Path:
    return write(path, json.dumps(value, ensure_ascii=False))


def test_squad_accepts_int_and_string_offsets_and_int_ids(tmp_path):
    path = write_json(
        tmp_path / "train-v0.1.json",
        squad(
            [
                {
                    "id": 1,
                    "question": "Başkent?",
                    "answers": [{"text": "Ankara", "answer_start": 0}],
                },
                {
                    "id": "b",
                    "question": "Kimin?",
                    "answers": [{"text": "başkentidir", "answer_start": "19"}],
                },
            ]
        ),
    )
    examples, report = read_squad(path)
    assert [(e.id, e.answers) for e in examples] == [
        ("1", (Answer("Ankara", 0),)),
        ("b", (Answer("başkentidir", 19),)),
    ]
    assert examples[0].title == "Ankara" and examples[0].question == "Başkent?"
    assert report.items == 2


def test_squad_answer_offset_mismatch_names_the_question_id(tmp_path):
    path = write_json(
        tmp_path / "train.json",
        squad(
            [
                {
                    "id": 42,
                    "question": "Kimin?",
                    "answers": [{"text": "Türkiye", "answer_start": "8"}],
                }
            ]
        ),
    )
    with pytest.raises(DownstreamDataError) as error:
        read_squad(path)
    assert str(error.value) == (
        f"{path}: question id 42: answers[0]: answer 'Türkiye' is not at answer_start 8: the "
        'context has "ürkiye\'" there; the text occurs at offset 7'
    )


def test_squad_duplicate_id_is_an_error(tmp_path):
    answer = [{"text": "Ankara", "answer_start": 0}]
    path = write_json(
        tmp_path / "train.json",
        squad(
            [
                {"id": 7, "question": "a?", "answers": answer},
                {"id": "7", "question": "b?", "answers": answer},
            ]
        ),
    )
    with pytest.raises(DownstreamDataError) as error:
        read_squad(path)
    assert str(error.value) == (
        f"{path}: question id 7: duplicate id (at data[0].paragraphs[0].qas[1] and "
        "data[0].paragraphs[0].qas[0])"
    )


def test_squad_missing_key_names_key_and_place(tmp_path):
    path = write_json(tmp_path / "train.json", squad([{"id": 3, "answers": []}]))
    with pytest.raises(DownstreamDataError) as error:
        read_squad(path)
    assert str(error.value) == f"{path}: question id 3: missing key 'question'"
    no_context = {"data": [{"title": "t", "paragraphs": [{"qas": []}]}]}
    with pytest.raises(DownstreamDataError) as error:
        read_squad(write_json(tmp_path / "b.json", no_context))
    assert str(error.value).endswith(": data[0].paragraphs[0]: missing key 'context'")


def test_squad_question_without_answers_is_skipped_and_counted_and_several_are_kept(tmp_path):
    path = write_json(
        tmp_path / "dev.json",
        squad(
            [
                {"id": "a", "question": "?", "answers": []},
                {
                    "id": "b",
                    "question": "Ne?",
                    "answers": [
                        {"text": "Ankara", "answer_start": 0},
                        {"text": "Ankara Türkiye'nin", "answer_start": 0},
                    ],
                },
            ]
        ),
    )
    examples, report = read_squad(path)
    assert [e.id for e in examples] == ["b"]
    assert len(examples[0].answers) == 2
    assert report.skipped == {"question without answers": 1}
    assert report.examples == [f"{path}: question id a: question without answers"]
    kept, _ = read_squad(path, keep_unanswered=True)
    assert [e.id for e in kept] == ["a", "b"]


def test_squad_non_numeric_answer_start_is_an_error(tmp_path):
    path = write_json(
        tmp_path / "train.json",
        squad([{"id": 5, "question": "?", "answers": [{"text": "Ankara", "answer_start": "0x"}]}]),
    )
    with pytest.raises(
        DownstreamDataError, match="question id 5: answers\\[0\\]: answer_start '0x'"
    ):
        read_squad(path)


def test_squad_invalid_utf8_and_invalid_json_name_the_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"data":\n [\xc3]}\n')
    with pytest.raises(DownstreamDataError, match=re.escape(f"{bad}:2: invalid UTF-8 at byte 2")):
        read_squad(bad)
    broken = write(tmp_path / "broken.json", '{"data":\n [}\n')
    with pytest.raises(DownstreamDataError, match=re.escape(f"{broken}:2: invalid JSON")):
        read_squad(broken)


# ------------------------------------------------------------------------------ real data


def test_real_shipped_files_read_without_errors():
    # The data sets the project fine-tunes on, as shipped, must read cleanly; they live outside
    # the repository (../shared/data), so the test is skipped where that copy is absent.
    if not SHARED_DATA.is_dir():
        pytest.skip(f"no shared data at {SHARED_DATA}")
    sentences, _ = read_conll(SHARED_DATA / "tr-wikiner" / "dev.conll")
    assert len(sentences) == 1000
    sentences, report = read_conllu(SHARED_DATA / "ud-tr-imst" / "tr_imst-ud-dev.conllu")
    assert len(sentences) == 1100 and report.skipped["multi-word token range"] > 0
    examples, _ = read_squad(SHARED_DATA / "tr-tquad" / "train-v0.1.json")
    assert len(examples) == 8308


def test_space_separated_conll_keeps_other_unicode_spaces_inside_a_token(tmp_path):
    path = write(tmp_path / "train.conll", "New\u00a0York B-LOC\r\nşehri  O\r\n")
    sentences, _ = read_conll(path)
    assert sentences[0].words == ("New\u00a0York", "şehri")
