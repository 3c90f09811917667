"""Labelled Turkish from the demo grammar: NER, POS, polarity and QA files for fine-tuning."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fairseq_struct.demo_data.synthetic_en_tr import (
    NOUNS,
    VERBS,
    Case,
    Clause,
    NounPhrase,
    Person,
    Subject,
    Tense,
    write_corpus,
)
from fairseq_struct.demo_data.synthetic_labelled_tr import (
    LabelledConfig,
    SentenceSource,
    annotate,
    held_out_lexemes,
    main,
    qa_paragraphs,
    tagged_sentences,
    write_labelled,
)

SPLITS = ("train", "valid", "test")
UD_UPOS = set(
    "ADJ ADP ADV AUX CCONJ DET INTJ NOUN NUM PART PRON PROPN PUNCT SCONJ SYM VERB X".split()
)
ENTITY_TYPES = {"PER", "ANIM", "LOC", "FOOD"}
QUESTION_WORDS = {"kim", "kimi", "kime", "ne", "neyi", "nereyi", "nerede", "nereye", "nereden"}
VERB = {(verb.tr, verb.frame.value): verb for verb in VERBS}
VERB_STEMS = {verb.tr for verb in VERBS}
# The negation suffix -mA- before the past, the progressive and the future: no stem ends in m.
NEGATED_VERB = re.compile(r"m[ae]d|m[ıiuü]yor|m[ae]y[ae]c[ae][kğ]")

SMALL = [
    "--train-sentences", "100", "--valid-sentences", "40", "--test-sentences", "40",
    "--train-questions", "20", "--valid-questions", "20", "--test-questions", "20",
]  # fmt: skip


@pytest.fixture(scope="module")
def labelled(tmp_path_factory) -> Path:
    """The demo's labelled data: default sizes, seed 3."""
    out = tmp_path_factory.mktemp("labelled")
    write_labelled(out, LabelledConfig())
    return out


@pytest.fixture(scope="module")
def pretraining(tmp_path_factory) -> tuple[set, set]:
    """(tokens of the demo's pretraining text, all its sentences), as scripts/demo-mlm.sh writes it."""
    out = tmp_path_factory.mktemp("pretraining")
    write_corpus(out, n_train=20000, n_valid=1000, n_test=10, seed=2)
    lines = (out / "train.tr").read_text(encoding="utf-8").splitlines()
    words = {token for line in lines for token in line[:-1].split() + [line[-1]]}
    sentences = set()
    for split in SPLITS:
        sentences.update((out / f"{split}.tr").read_text(encoding="utf-8").splitlines())
    return words, sentences


def read_conll(path: Path) -> list[list[tuple[str, str]]]:
    blocks = path.read_text(encoding="utf-8").split("\n\n")
    return [[tuple(line.split("\t")) for line in block.splitlines()] for block in blocks if block]


def read_conllu(path: Path) -> list[tuple[dict, list[list[str]]]]:
    sentences = []
    for block in path.read_text(encoding="utf-8").split("\n\n"):
        if not block:
            continue
        lines = block.splitlines()
        comments = dict(line[2:].split(" = ", 1) for line in lines if line.startswith("# "))
        sentences.append((comments, [line.split("\t") for line in lines if line[0] != "#"]))
    return sentences


def read_polarity(directory: Path, split: str) -> dict[str, list[str]]:
    return {
        label: (directory / "sentiment" / f"{split}.{label}").read_text("utf-8").splitlines()
        for label in ("olumlu", "olumsuz")
    }


def read_qa(directory: Path, split: str) -> list[dict]:
    document = json.loads((directory / "qa" / f"{split}.json").read_text(encoding="utf-8"))
    assert document["version"] == "1.1"
    return [paragraph for article in document["data"] for paragraph in article["paragraphs"]]


def turkish_lower(word: str) -> str:
    return word.replace("İ", "i").replace("I", "ı").lower()


def all_texts(directory: Path, split: str) -> list[str]:
    """Every sentence of a split in every task (QA contexts cut at their sentence ends)."""
    texts = [comments["text"] for comments, _ in read_conllu(directory / "pos" / f"{split}.conllu")]
    for lines in read_polarity(directory, split).values():
        texts += lines
    for paragraph in read_qa(directory, split):
        texts += re.findall(r"[^.]+\.", paragraph["context"].replace(". ", ".\n"))
    return [text.strip() for text in texts]


# ------------------------------------------------------------------------------- by hand


def test_hand_built_clause_gets_the_hand_made_tags():
    # "Yesterday the child ate a big apple in the garden."
    clause = Clause(
        VERB["ye", "transitive"],
        Subject(Person.P3SG, "the child", NounPhrase(NOUNS["çocuk"])),
        Tense.PAST,
        negative=False,
        question=False,
        obj=NounPhrase(NOUNS["elma"], definite=False, adjective="büyük"),
        case=Case.LOC,
        adverbial=NounPhrase(NOUNS["bahçe"]),
        time=("dün", "yesterday"),
    )
    sentence = annotate(clause)
    assert sentence.text == "Dün çocuk bahçede büyük bir elma yedi."
    assert [(t.form, t.lemma, t.upos, t.entity) for t in sentence.tokens] == [
        ("Dün", "dün", "ADV", "O"),
        ("çocuk", "çocuk", "NOUN", "B-PER"),
        ("bahçede", "bahçe", "NOUN", "B-LOC"),
        ("büyük", "büyük", "ADJ", "B-FOOD"),
        ("bir", "bir", "DET", "I-FOOD"),
        ("elma", "elma", "NOUN", "I-FOOD"),
        ("yedi", "ye", "VERB", "O"),
        (".", ".", "PUNCT", "O"),
    ]


def test_question_particle_is_aux_and_light_verbs_split_noun_verb():
    clause = Clause(
        VERB["tamir et", "transitive"],
        Subject(Person.P2SG, "you"),
        Tense.PROGRESSIVE,
        negative=False,
        question=True,
        obj=NounPhrase(NOUNS["radyo"], possessor=Person.P1SG),
    )
    sentence = annotate(clause)
    assert sentence.text == "Radyomu tamir ediyor musun?"
    assert [(t.lemma, t.upos, t.entity) for t in sentence.tokens] == [
        ("radyo", "NOUN", "O"),
        ("tamir", "NOUN", "O"),
        ("et", "VERB", "O"),
        ("mı", "AUX", "O"),
        ("?", "PUNCT", "O"),
    ]


def test_generated_sentences_carry_the_tags_checked_by_hand(labelled):
    ner = read_conll(labelled / "ner" / "train.conll")
    pos = read_conllu(labelled / "pos" / "train.conllu")
    # train-5: "The police officer will not visit the blue cinemas."
    assert ner[4] == [
        ("Polis", "B-PER"),
        ("mavi", "B-LOC"),
        ("sinemaları", "I-LOC"),
        ("ziyaret", "O"),
        ("etmeyecek", "O"),
        (".", "O"),
    ]
    comments, rows = pos[4]
    assert comments == {"sent_id": "train-5", "text": "Polis mavi sinemaları ziyaret etmeyecek."}
    assert [row[2:4] for row in rows] == [
        ["polis", "NOUN"],
        ["mavi", "ADJ"],
        ["sinema", "NOUN"],
        ["ziyaret", "NOUN"],
        ["et", "VERB"],
        [".", "PUNCT"],
    ]
    # train-19: "Did the woman work at the market today?"
    assert ner[18] == [
        ("Bugün", "O"),
        ("kadın", "B-PER"),
        ("pazarda", "B-LOC"),
        ("çalıştı", "O"),
        ("mı", "O"),
        ("?", "O"),
    ]
    assert [row[3] for row in pos[18][1]] == ["ADV", "NOUN", "NOUN", "VERB", "AUX", "PUNCT"]
    first = read_qa(labelled, "train")[0]
    assert first["context"].startswith("Doktor şarkı söyleyecek. Bugün lokantada bir şemsiye")
    assert first["qas"][0] == {
        "id": "train-0000-0",
        "question": "Bugün nerede bir şemsiye kaybetti?",
        "answers": [{"text": "lokantada", "answer_start": "31"}],
    }


# ------------------------------------------------------------------------------- formats


def test_every_ner_sentence_is_valid_iob2_over_the_four_types(labelled):
    for split in SPLITS:
        sentences = read_conll(labelled / "ner" / f"{split}.conll")
        assert len(sentences) == {"train": 200, "valid": 300, "test": 500}[split]
        for sentence in sentences:
            previous = "O"
            for token, tag in sentence:
                assert token and not any(char.isspace() for char in token)
                assert tag == "O" or tag[:2] in ("B-", "I-") and tag[2:] in ENTITY_TYPES, tag
                if tag.startswith("I-"):
                    assert previous != "O" and previous[2:] == tag[2:], sentence
                previous = tag
            assert sentence[-1][0] in (".", "?") and sentence[-1][1] == "O"
            assert all(token not in (".", "?") for token, _ in sentence[:-1])


def test_every_upos_is_a_ud_tag_and_text_is_rebuilt_from_the_tokens(labelled):
    for split in SPLITS:
        sentences = read_conllu(labelled / "pos" / f"{split}.conllu")
        for number, (comments, rows) in enumerate(sentences, start=1):
            assert comments["sent_id"] == f"{split}-{number}"
            assert [row[0] for row in rows] == [str(i) for i in range(1, len(rows) + 1)]
            assert all(len(row) == 10 and row[4:9] == ["_"] * 5 for row in rows)
            assert {row[3] for row in rows} <= UD_UPOS
            text = "".join(row[1] + ("" if row[9] == "SpaceAfter=No" else " ") for row in rows)
            assert text.strip() == comments["text"]


def test_ner_and_pos_label_the_same_sentences(labelled):
    for split in SPLITS:
        ner = read_conll(labelled / "ner" / f"{split}.conll")
        pos = read_conllu(labelled / "pos" / f"{split}.conllu")
        assert [[t for t, _ in s] for s in ner] == [[row[1] for row in rows] for _, rows in pos]


def test_every_valid_and_test_label_occurs_in_train(labelled):
    # the downstream readers refuse labels that the training split never shows
    def labels(split):
        pos = read_conllu(labelled / "pos" / f"{split}.conllu")
        ner = read_conll(labelled / "ner" / f"{split}.conll")
        return {row[3] for _, rows in pos for row in rows}, {t for s in ner for _, t in s}

    train_upos, train_tags = labels("train")
    assert train_upos == {"ADJ", "ADV", "AUX", "DET", "NOUN", "PUNCT", "VERB"}
    assert {tag[2:] for tag in train_tags if tag != "O"} == ENTITY_TYPES
    for split in ("valid", "test"):
        upos, tags = labels(split)
        assert upos <= train_upos and {t[2:] for t in tags} <= {t[2:] for t in train_tags}


def test_polarity_classes_are_balanced_and_decided_by_the_verb(labelled):
    for split, size in (("train", 100), ("valid", 150), ("test", 250)):
        by_label = read_polarity(labelled, split)
        assert {label: len(lines) for label, lines in by_label.items()} == {
            "olumlu": size,
            "olumsuz": size,
        }
        for label, lines in by_label.items():
            for line in lines:
                assert line.endswith(".")  # statements: questions are never negated
                negated = bool(NEGATED_VERB.search(line.split()[-1]))
                assert negated == (label == "olumsuz"), (label, line)


def test_every_answer_offset_is_exact_and_ids_are_unique(labelled):
    ids = set()
    for split, size in (("train", 150), ("valid", 300), ("test", 300)):
        questions = 0
        for paragraph in read_qa(labelled, split):
            context = paragraph["context"]
            assert 3 <= context.count(". ") + 1 <= 5
            for qa in paragraph["qas"]:
                (answer,) = qa["answers"]
                start = answer["answer_start"]
                # TQuAD writes offsets as strings: train does too, valid and test write ints
                assert isinstance(start, str if split == "train" else int)
                start = int(start)
                assert context[start : start + len(answer["text"])] == answer["text"]
                assert qa["id"] not in ids
                ids.add(qa["id"])
                questions += 1
        assert questions == size


def test_each_question_is_answered_by_one_sentence_of_its_paragraph(labelled):
    for split in SPLITS:
        for paragraph in read_qa(labelled, split):
            context = paragraph["context"]
            sentences = [sentence + "." for sentence in context[:-1].split(". ")]
            for qa in paragraph["qas"]:
                question = qa["question"]
                words = {turkish_lower(word) for word in question[:-1].split()}
                assert question.endswith("?") and len(words & QUESTION_WORDS) == 1
                # a sentence answers it when it ends in the question's verb and has every other
                # word of the question ("gelecek" is also the adjective of "gelecek hafta")
                answering = [
                    sentence
                    for sentence in sentences
                    if sentence[:-1].split()[-1] == question[:-1].split()[-1]
                    and words - QUESTION_WORDS <= {turkish_lower(w) for w in sentence[:-1].split()}
                ]
                assert len(answering) == 1, (question, context)
                offset = context.index(answering[0])
                start = int(qa["answers"][0]["answer_start"])
                assert offset <= start < offset + len(answering[0])


def test_the_sentences_of_a_paragraph_have_different_verbs():
    # what makes the answer unique: only one sentence has the question's verb
    source = SentenceSource(held_out_lexemes(3, 0.35), None, frozenset())
    for split in ("train", "test"):
        for paragraph in qa_paragraphs(source, 3, split, 300):
            verbs = [sentence.clause.verb.tr for sentence in paragraph.sentences]
            assert len(set(verbs)) == len(verbs), paragraph.context


# ------------------------------------------------------------------------------- splits


def lexemes_of(rows: list[list[str]]) -> set[str]:
    """``kind:lemma`` of a CoNLL-U sentence's verb, nouns and adjectives, as the grammar names them."""
    found = set()
    for index, row in enumerate(rows):
        lemma, upos = row[2], row[3]
        following = rows[index + 1] if index + 1 < len(rows) else None
        if following and following[3] == "VERB" and f"{lemma} {following[2]}" in VERB_STEMS:
            continue  # the first word of a light-verb compound: ziyaret et, şarkı söyle
        if upos == "VERB":
            compound = f"{rows[index - 1][2]} {lemma}"
            found.add("verb:" + (compound if compound in VERB_STEMS else lemma))
        elif upos in ("NOUN", "ADJ"):
            found.add(("noun:" if upos == "NOUN" else "adj:") + lemma)
    return found


def test_training_never_shows_the_held_out_words_and_valid_test_always_do(labelled):
    held_out = held_out_lexemes(3, 0.35)
    assert len(held_out) == 61
    for split in SPLITS:
        for comments, rows in read_conllu(labelled / "pos" / f"{split}.conllu"):
            assert bool(lexemes_of(rows) & held_out) == (split != "train"), comments["text"]


def test_no_sentence_is_shared_between_train_and_valid_or_test(labelled):
    train = set(all_texts(labelled, "train"))
    valid, test = set(all_texts(labelled, "valid")), set(all_texts(labelled, "test"))
    assert len(train) > 500 and len(valid) > 700 and len(test) > 1000
    assert not train & valid and not train & test and not valid & test


def test_valid_and_test_do_not_depend_on_the_size_of_train():
    def texts(n_train):
        source = SentenceSource(held_out_lexemes(3, 0.35), None, frozenset())
        splits = tagged_sentences(source, 3, {"train": n_train, "valid": 30, "test": 30})
        return {split: [sentence.text for sentence in splits[split]] for split in SPLITS}

    small, large = texts(20), texts(60)
    assert small["train"] == large["train"][:20]
    assert small["valid"] == large["valid"] and small["test"] == large["test"]


def test_words_occur_in_the_demo_pretraining_text(labelled, pretraining):
    pretraining_words, _ = pretraining
    lowered = {turkish_lower(word) for word in pretraining_words}
    for split in SPLITS:
        for sentence in read_conll(labelled / "ner" / f"{split}.conll"):
            assert all(token in pretraining_words for token, _ in sentence), sentence
        for lines in read_polarity(labelled, split).values():
            for line in lines:
                assert all(token in pretraining_words for token in line[:-1].split()), line
        for paragraph in read_qa(labelled, split):
            context = paragraph["context"]
            assert all(word.rstrip(".") in pretraining_words for word in context.split())
            for qa in paragraph["qas"]:
                # documented exceptions: question words, and a question's first word's case
                words = {turkish_lower(word) for word in qa["question"][:-1].split()}
                assert words - QUESTION_WORDS <= lowered, qa["question"]


def test_no_labelled_sentence_is_a_pretraining_sentence(labelled, pretraining):
    _, pretraining_sentences = pretraining
    for split in SPLITS:
        assert not set(all_texts(labelled, split)) & pretraining_sentences


# A fresh interpreter that runs the generator without the package's registering __init__ (torch,
# fairseq: seconds of imports that the generator does not use).
FRESH_INTERPRETER = """
import sys, types
package = types.ModuleType("fairseq_struct")
package.__path__ = [sys.argv[1]]
sys.modules["fairseq_struct"] = package
from fairseq_struct.demo_data.synthetic_labelled_tr import main
main(sys.argv[2:])
"""


def test_same_seed_writes_byte_identical_files_in_another_process(tmp_path):
    main(["--out-dir", str(tmp_path / "here"), *SMALL])
    package = Path(__file__).resolve().parents[2] / "fairseq_struct"
    subprocess.run(
        [sys.executable, "-c", FRESH_INTERPRETER, str(package)]
        + ["--out-dir", str(tmp_path / "there"), *SMALL],
        check=True,
        env=dict(os.environ, PYTHONHASHSEED="12345"),
        capture_output=True,
    )
    here = sorted(p.relative_to(tmp_path / "here") for p in (tmp_path / "here").rglob("*.*"))
    assert len(here) == 15
    for path in here:
        assert (tmp_path / "here" / path).read_bytes() == (tmp_path / "there" / path).read_bytes()


def test_cli_prints_counts_labels_and_entities(tmp_path, capsys):
    summary = main(["--out-dir", str(tmp_path), "--seed", "4", *SMALL])
    printed = capsys.readouterr().out
    assert "seed 4" in printed and "olumsuz" in printed and "B-" not in printed
    assert summary["sentiment/valid"] == {"olumlu": 20, "olumsuz": 20}
    assert set(summary["tagging/train"]["entities"]) == ENTITY_TYPES
    assert summary["qa/test"]["questions"] == 20
    # a different seed: different sentences and a different held-out lexicon
    assert held_out_lexemes(4, 0.35) != held_out_lexemes(3, 0.35)
