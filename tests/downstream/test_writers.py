"""Downstream writers: predictions go back into a copy of the input, line for line."""

import json

import pytest

from fairseq_struct.downstream.readers import DownstreamDataError, read_conll, read_conllu
from fairseq_struct.downstream.writers import (
    write_conll_predictions,
    write_conllu_predictions,
    write_labels,
    write_squad_predictions,
)

CONLL = "-DOCSTART-\tO\n\nAhmet\tB-PER\nAnkara'ya\tB-LOC\ngitti\tO\n\n\nO\tO\n"

CONLLU = (
    "# sent_id = 1\n"
    "1-2\tEvdeki\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "1\tEvde\tev\tNOUN\tNoun\t_\t2\tnmod\t_\t_\n"
    "2\tki\tki\tADP\tAdp\t_\t3\tcase\t_\t_\n"
    "2.1\tvar\t_\t_\t_\t_\t_\t_\t_\t_\n"
    "3\tkitap\tkitap\tNOUN\tNoun\t_\t0\troot\t_\tSpaceAfter=No\n"
    "\n"
)


def test_conll_round_trip_appends_each_gold_tag_to_its_line(tmp_path):
    source = tmp_path / "test.conll"
    source.write_text(CONLL, encoding="utf-8")
    sentences, _ = read_conll(source)
    out = tmp_path / "out" / "predictions.conll"
    write_conll_predictions(sentences, [s.tags for s in sentences], out)
    expected = [
        line + "\t" + line.split("\t")[1] if line and not line.startswith("-DOCSTART-") else line
        for line in CONLL.split("\n")
    ]
    assert out.read_text(encoding="utf-8") == "\n".join(expected)
    assert out.read_text(encoding="utf-8").split("\n")[2] == "Ahmet\tB-PER\tB-PER"


def test_conll_predictions_keep_crlf_bom_and_germeval_comments(tmp_path):
    source = tmp_path / "NER-de-test.tsv"
    text = "\ufeff# kaynak\r\n1\tBerlin\tB-LOC\tO\r\n2\tist\tO\tO\r\n"
    source.write_bytes(text.encode("utf-8"))
    sentences, _ = read_conll(source)
    out = tmp_path / "predictions.tsv"
    write_conll_predictions(sentences, [["B-ORG", "O"]], out)
    assert out.read_bytes() == (
        "\ufeff# kaynak\r\n1\tBerlin\tB-LOC\tO\tB-ORG\r\n2\tist\tO\tO\tO\r\n".encode("utf-8")
    )


def test_conll_predictions_after_a_trailing_tab_add_no_empty_column(tmp_path):
    source = tmp_path / "NER-de-test.tsv"
    text = '#\tquelle\t[2007-08-11]\n1\t"\tO\tO\t\n2\tBagdad\tB-LOC\tO\n'
    source.write_text(text, encoding="utf-8")
    sentences, _ = read_conll(source)
    out = tmp_path / "predictions.tsv"
    write_conll_predictions(sentences, [["O", "B-LOC"]], out)
    assert out.read_text(encoding="utf-8").splitlines()[1:] == [
        '1\t"\tO\tO\tO',
        "2\tBagdad\tB-LOC\tO\tB-LOC",
    ]


def test_conll_prediction_count_must_match_the_words(tmp_path):
    source = tmp_path / "test.conll"
    source.write_text(CONLL, encoding="utf-8")
    sentences, _ = read_conll(source)
    out = tmp_path / "predictions.conll"
    with pytest.raises(DownstreamDataError) as error:
        write_conll_predictions(sentences, [["O", "O"], ["O"]], out)
    assert str(error.value) == f"{source}:3: 2 predicted tags for a sentence of 3 words"
    assert not out.exists()


def test_conllu_predictions_replace_only_the_upos_column(tmp_path):
    source = tmp_path / "test.conllu"
    source.write_bytes(CONLLU.replace("\n", "\r\n").encode("utf-8"))
    sentences, _ = read_conllu(source)
    out = tmp_path / "predictions.conllu"
    write_conllu_predictions(sentences, [["PROPN", "ADP", "VERB"]], out)
    expected = (
        CONLLU.replace("Evde\tev\tNOUN", "Evde\tev\tPROPN")
        .replace("kitap\tkitap\tNOUN", "kitap\tkitap\tVERB")
        .replace("\n", "\r\n")
    )
    assert out.read_bytes() == expected.encode("utf-8")
    write_conllu_predictions(sentences, [s.tags for s in sentences], out)
    assert out.read_bytes() == source.read_bytes()


def test_conllu_word_line_without_prediction_is_an_error(tmp_path):
    source = tmp_path / "test.conllu"
    source.write_text(CONLLU + CONLLU.replace("sent_id = 1", "sent_id = 2"), encoding="utf-8")
    sentences, _ = read_conllu(source)
    with pytest.raises(DownstreamDataError, match=f"{source}:10: word line without a prediction"):
        write_conllu_predictions(sentences[:1], [sentences[0].tags], tmp_path / "p.conllu")


def test_labels_and_squad_predictions(tmp_path):
    write_labels(["pos", "neg"], tmp_path / "predictions.txt")
    assert (tmp_path / "predictions.txt").read_text(encoding="utf-8") == "pos\nneg\n"
    write_squad_predictions({"1": "Türkiye'nin başkenti"}, tmp_path / "predictions.json")
    raw = (tmp_path / "predictions.json").read_bytes()
    assert "Türkiye'nin".encode("utf-8") in raw
    assert json.loads(raw.decode("utf-8")) == {"1": "Türkiye'nin başkenti"}
    with pytest.raises(DownstreamDataError, match="predictions.txt:2: label 'a\\\\nb'"):
        write_labels(["pos", "a\nb"], tmp_path / "predictions.txt")
