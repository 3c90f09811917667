"""Labelled words are cut exactly as the imported model's own tokenizer cuts a line: the same
pieces as transformers' fast tokenizers on every line of the shared Turkish text (cased and
uncased WordPiece, XLM-R's SentencePiece), unknown characters and over-long words to the
unknown token, and the labels of a word on the piece where the encoder sees it begin."""

from typing import List

import pytest
from conftest import SHARED_DATA

from fairseq_struct.downstream.features import IGNORED_LABEL, CutCounts, token_windows
from fairseq_struct.morph.units import PretrainingUnits, UnitCutter
from fairseq_struct.pieces.word_boundaries import word_start_lookup, word_structure

TEXT_FILES = [
    "tr-raw/tr_wikiner_train_sentences.txt",
    "en-tr-tatoeba/tatoeba.tr",
    "en-tr-setimes-sample/train.tr",
    "tr-sentiment/train.pos",
    "tr-sentiment/train.neg",
]
# What the shared text lacks: dotted and dotless I's in both cases, accents, a word longer than
# BERT's 100 characters, characters outside the vocabulary, punctuation inside words.
EDGE_LINES = [
    "İstanbul'da IŞIK ışık İi Iı çiçekçi'ye GÖZLÜĞÜ",
    'café naïve Ankara\'ya (1923) "Atatürk" -- 3,5 % e-posta@örnek.com',
    "uzun " + "a" * 150 + " kelime 😀 漢字 ∮ \u0301",
]


def shared_turkish_lines() -> List[str]:
    lines = []
    for name in TEXT_FILES:
        path = SHARED_DATA / name
        if path.exists():
            lines += [line for line in path.read_text(encoding="utf-8").splitlines() if line]
    return lines


@pytest.mark.parametrize("name", ["bert-pretraining", "bert-masked-lm", "xlmr"])
def test_cut_words_give_the_tokenizers_pieces_of_every_line(tiny_hf_models, name):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_hf_models / "hf" / name))
    units = PretrainingUnits.from_data_dir(tiny_hf_models / "imported" / name)
    fairseq_name = units.special_names
    lines = shared_turkish_lines()
    assert len(lines) > 40000, "the shared Turkish text is incomplete"
    # BERT's tokenizers on every line; XLM-R's (whose pre-tokenizer only splits at spaces) on
    # the first 5,000.
    lines = (lines if name != "xlmr" else lines[:5000]) + EDGE_LINES
    # What transformers' fast tokenizer runs on each line (its Rust backend, as __call__ does).
    by_id = {index: fairseq_name.get(t, t) for t, index in tokenizer.get_vocab().items()}
    expected = [
        [by_id[index] for index in encoding.ids]
        for encoding in tokenizer.backend_tokenizer.encode_batch(lines, add_special_tokens=False)
    ]
    cut = UnitCutter(units).cut([line.split() for line in lines])
    # A word the tokenizer gives no piece (only characters its cleaning removes) is one <unk>
    # here, so that its label has a token: the only difference allowed.
    empty = 0
    for line, words, pieces in zip(lines, cut, expected):
        flat = []
        for word, word_pieces in zip(line.split(), words):
            if word_pieces == ["<unk>"] and not tokenizer.tokenize(word):
                empty += 1
            else:
                flat += word_pieces
        assert flat == pieces, f"{line!r}: {flat} != {pieces}"
    assert empty < 10
    if name != "xlmr":  # BERT: a word over 100 characters is one [UNK]; so is an emoji
        assert UnitCutter(units).cut([["a" * 150, "😀"]]) == [[["<unk>"], ["<unk>"]]]


def test_cased_and_uncased_vocabularies_treat_the_turkish_is_as_bert_does(tiny_hf_models):
    cased = UnitCutter(PretrainingUnits.from_data_dir(tiny_hf_models / "imported" / "bert-model"))
    uncased = UnitCutter(
        PretrainingUnits.from_data_dir(tiny_hf_models / "imported" / "bert-masked-lm")
    )
    words = ["IŞIK", "ışık", "İzmir"]
    joined = ["".join(p.replace("##", "") for p in pieces) for pieces in cased.cut([words])[0]]
    assert joined == words  # cased: nothing changes
    lowered = ["".join(p.replace("##", "") for p in pieces) for pieces in uncased.cut([words])[0]]
    # BERT's uncased normaliser lowercases without Turkish rules and strips the accents (the
    # dot of İ and the cedilla of ş are combining marks): I -> i (not ı), ş -> s, İ -> i; ı has
    # no accent to strip. So IŞIK and ışık are two words to uncased BERT, as transformers has it.
    assert lowered == ["isik", "ısık", "izmir"]


def test_qa_spans_point_into_the_original_text(tiny_hf_models):
    """Spans come from the tokenizer's offsets: right even where the uncased normaliser changed
    the characters (İ -> i, accents stripped)."""
    cutter = UnitCutter(
        PretrainingUnits.from_data_dir(tiny_hf_models / "imported" / "bert-masked-lm")
    )
    text = "  İSTANBUL'da  Çağlayan'a gittik."
    units, spans = cutter.cut_text(text)
    assert sum(len(word) for word in units) == len(spans)
    assert all(a < b <= c for (a, b), (c, _) in zip(spans, spans[1:]))
    assert "".join(text[a:b] for a, b in spans) == "İSTANBUL'daÇağlayan'agittik."


@pytest.mark.parametrize("name", ["bert-pretraining", "xlmr"])
def test_labels_sit_on_the_piece_where_the_encoder_sees_the_word_begin(tiny_hf_models, name):
    from fairseq.data import Dictionary

    imported = tiny_hf_models / "imported" / name
    units = PretrainingUnits.from_data_dir(imported)
    dictionary = Dictionary.load(str(imported / "dict.txt"))
    words = ["Öğretmenlerimizden", "Ankara'da", "kitapçıdaydılar", "."]
    (cut,) = UnitCutter(units).cut([words])
    labels = [f"L{i}" for i in range(len(words))]
    (window,) = token_windows(0, cut, labels, dictionary, 64, CutCounts())
    import torch

    tokens = torch.tensor([window.tokens])
    starts = word_start_lookup(dictionary)[tokens]
    structure = word_structure(starts, tokens, dictionary.eos())
    labelled = [i for i, label in enumerate(window.labels) if label != IGNORED_LABEL]
    assert [window.labels[i] for i in labelled] == labels
    assert all(bool(starts[0, i]) and int(structure.position_in_word[0, i]) == 0 for i in labelled)
    # The other pieces of a labelled word continue it (punctuation inside a word is a word of
    # its own for BERT, as the BERT2D authors' word ids have it).
    first_word = cut[0]
    assert len(first_word) > 1 and not any(
        bool(starts[0, 1 + j]) for j in range(1, len(first_word))
    )


def test_a_piece_after_a_separator_begins_a_word(tiny_hf_models):
    """A QA window may start its context inside a word: its first piece is still a word start."""
    import torch
    from fairseq.data import Dictionary

    dictionary = Dictionary.load(str(tiny_hf_models / "imported" / "bert-model" / "dict.txt"))
    continuation = next(s for s in dictionary.symbols if s.startswith("##"))
    tokens = torch.tensor(
        [
            [
                dictionary.bos(),
                dictionary.index("a"),
                dictionary.eos(),
                dictionary.index(continuation),
            ]
        ]
    )
    structure = word_structure(word_start_lookup(dictionary)[tokens], tokens, dictionary.eos())
    assert structure.word_index.tolist() == [[0, 1, 2, 3]]
