"""Seeded LABELLED Turkish from the demo grammar: NER, POS, a sentence label and extractive QA.

Drawn from `synthetic_en_tr`'s grammar, so the words are the ones the demo's pretraining saw, and
written in the raw formats the real data sets ship in, for ``scripts/demo-finetune.sh``:

- ``ner/{split}.conll``: ``token<TAB>tag``, IOB2, a blank line after every sentence. An entity
  is a whole noun phrase (``büyük bir elma`` is B-FOOD I-FOOD I-FOOD), typed by its noun: PER
  (people and the baby), ANIM (animals), LOC (places and waters), FOOD (food and drinks); things,
  vehicles and time expressions are O.
- ``pos/{split}.conllu``: ID, FORM, LEMMA, UPOS and ``SpaceAfter=No`` before the final
  punctuation; the other columns ``_``.
- ``sentiment/{split}.olumlu|olumsuz``: statements, one a line, by polarity (olumlu: affirmative
  verb, olumsuz: negated verb), the classes balanced.
- ``qa/{split}.json``: SQuAD v1.1. Paragraphs of 3-5 statements with pairwise different verbs;
  each question is one of them with a noun phrase replaced by a question word (kim, kimi, kime,
  neyi, ne, nereyi, nerede, nereye, nereden), so exactly one span answers it. ``answer_start``
  is a string in train (as TQuAD writes it) and an int in valid and test.

A seeded share of the lexicon is held out of training: every valid and test sentence holds a
word that only pretraining showed, so scoring them measures what the encoder brings.
"""

from __future__ import annotations

import argparse
import functools
import json
import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Sequence

from fairseq_struct.demo_data.synthetic_en_tr import (
    ADJECTIVES,
    ANIMALS,
    CONTAINERS,
    DRINKS,
    FOOD,
    NOUNS,
    PEOPLE,
    PLACES,
    VERBS,
    WATERS,
    Case,
    Clause,
    NounPhrase,
    capitalize_tr,
    generate_corpus,
    nouns,
    sample_clause,
)

SPLITS = ("train", "valid", "test")

# The grammar's semantic noun classes as entity types; nouns in none of them are O.
ENTITY_CLASSES = {
    "PER": PEOPLE + nouns("bebek"),
    "ANIM": ANIMALS,
    "LOC": PLACES + WATERS,
    "FOOD": FOOD + DRINKS,
}
ENTITY_TYPE = {noun.tr: kind for kind, pool in ENTITY_CLASSES.items() for noun in pool}

# The 17 UPOS tags of Universal Dependencies v2.
UD_UPOS = frozenset(
    "ADJ ADP ADV AUX CCONJ DET INTJ NOUN NUM PART PRON PROPN PUNCT SCONJ SYM VERB X".split()
)
# The first word of a light-verb compound (ziyaret et, tamir et, satın al, şarkı söyle): the
# nominal part is a NOUN, satın an ADV (it occurs only in satın al-), as in UD Turkish.
PREVERB_UPOS = {"ziyaret": "NOUN", "tamir": "NOUN", "şarkı": "NOUN", "satın": "ADV"}
# Time words: "geçen"/"gelecek" modify "hafta" (and "gelecek" is also a future verb form).
TIME_UPOS = {
    "dün": "ADV",
    "bugün": "ADV",
    "şimdi": "ADV",
    "yarın": "ADV",
    "geçen": "ADJ",
    "gelecek": "ADJ",
    "hafta": "NOUN",
}
QUESTION_PARTICLE_LEMMA = "mı"

POLARITY_LABELS = ("olumlu", "olumsuz")  # affirmative, negative: the file extensions

# scripts/demo-mlm.sh: --valid 1000 --test 10, taken first from the stream; train.tr follows.
DEMO_MLM_VALID = 1000
DEMO_MLM_TEST = 10


# ------------------------------------------------------------------------------- sentences


@dataclass(frozen=True)
class Token:
    """One token of a labelled sentence: its form as written, lemma, UPOS and IOB2 entity tag."""

    form: str
    lemma: str
    upos: str
    entity: str


@dataclass(frozen=True)
class Constituent:
    """A role's words as spelled in the sentence, with the character offset of the first."""

    role: str  # time, subject, object, adverbial or verb
    words: tuple[str, ...]
    start: int
    phrase: Optional[NounPhrase]
    case: Optional[Case]  # of a noun phrase: nominative subject, accusative definite object

    @property
    def text(self) -> str:
        return " ".join(self.words)


@dataclass(frozen=True)
class LabelledSentence:
    clause: Clause
    text: str
    tokens: tuple[Token, ...]
    constituents: tuple[Constituent, ...]


def split_punctuation(text: str) -> list[str]:
    """Whitespace words with a final "." or "?" split off as a token of its own."""
    tokens = []
    for word in text.split():
        if len(word) > 1 and word[-1] in ".?":
            tokens += [word[:-1], word[-1]]
        else:
            tokens.append(word)
    return tokens


def _phrase_of(clause: Clause, role: str) -> Optional[NounPhrase]:
    if role == "subject":
        return clause.subject.noun_phrase
    return {"object": clause.obj, "adverbial": clause.adverbial}.get(role)


def _phrase_tokens(phrase: NounPhrase, words: list[str]) -> list[tuple[str, str, str, str]]:
    """(form, lemma, upos, entity) of a noun phrase: [adjective] [bir] noun."""
    kind = ENTITY_TYPE.get(phrase.noun.tr)
    out = []
    for position, word in enumerate(words):
        if position == len(words) - 1:
            lemma, upos = phrase.noun.tr, "NOUN"
        elif word == phrase.adjective and position == 0:
            lemma, upos = word, "ADJ"
        else:  # the indefinite article, after any adjective: (büyük) bir ev
            lemma, upos = "bir", "DET"
        entity = "O" if kind is None else ("B-" if position == 0 else "I-") + kind
        out.append((word, lemma, upos, entity))
    return out


def _verb_tokens(clause: Clause, words: list[str]) -> list[tuple[str, str, str, str]]:
    """Preverbs of a light-verb compound, the inflected verb, then the question particle."""
    *preverbs, stem = clause.verb.tr.split(" ")
    out = [(word, word, PREVERB_UPOS[word], "O") for word in preverbs]
    out.append((words[len(preverbs)], stem, "VERB", "O"))
    if clause.question:
        out.append((words[-1], QUESTION_PARTICLE_LEMMA, "AUX", "O"))
    if len(out) != len(words):
        raise ValueError(f"verb words {words} of {clause.verb.tr!r} do not match its parts")
    return out


def annotate(clause: Clause) -> LabelledSentence:
    """Tokens with lemma, UPOS and entity tag, and each role's span, of one sampled clause."""
    rows: list[tuple[str, str, str, str]] = []
    constituents = []
    offset = 0
    for role, words in clause.turkish_constituents():
        phrase = _phrase_of(clause, role)
        if phrase is not None:
            rows += _phrase_tokens(phrase, words)
        elif role == "verb":
            rows += _verb_tokens(clause, words)
        else:
            rows += [(word, word, TIME_UPOS[word], "O") for word in words]
        if offset == 0:
            # the sentence's first word is written with a capital; its lemma is not
            words = [capitalize_tr(words[0])] + words[1:]
            rows[0] = (words[0],) + rows[0][1:]
        case = {"subject": Case.NOM, "adverbial": clause.case}.get(role)
        if role == "object":
            case = Case.ACC if phrase.definite else Case.NOM
        constituents.append(Constituent(role, tuple(words), offset, phrase, case))
        offset += len(" ".join(words)) + 1
    punctuation = "?" if clause.question else "."
    rows.append((punctuation, punctuation, "PUNCT", "O"))
    text = " ".join(row[0] for row in rows[:-1]) + punctuation
    if text != clause.turkish():
        raise AssertionError(f"annotated tokens spell {text!r}, the grammar {clause.turkish()!r}")
    tokens = tuple(Token(*row) for row in rows)
    return LabelledSentence(clause, text, tokens, tuple(constituents))


# ------------------------------------------------------------------------------- lexicon split


def lexemes(clause: Clause) -> set[str]:
    """The clause's open-class words as ``kind:lemma``: verb, nouns and adjectives."""
    found = {f"verb:{clause.verb.tr}"}
    for phrase in (clause.subject.noun_phrase, clause.obj, clause.adverbial):
        if phrase is not None:
            found.add(f"noun:{phrase.noun.tr}")
            if phrase.adjective:
                found.add(f"adj:{phrase.adjective}")
    return found


def held_out_lexemes(seed: int, share: float) -> frozenset[str]:
    """A seeded ``share`` of each entity class's nouns, the other nouns, adjectives and verbs.

    Taking the share within each class keeps every entity type in the training data.
    """
    groups = {f"nouns-{kind}": [noun.tr for noun in pool] for kind, pool in ENTITY_CLASSES.items()}
    groups["nouns-O"] = [word for word in NOUNS if word not in ENTITY_TYPE]
    groups["adjectives"] = list(ADJECTIVES)
    groups["verbs"] = sorted({verb.tr for verb in VERBS})
    held_out = set()
    for name, words in groups.items():
        kind = "verb" if name == "verbs" else "adj" if name == "adjectives" else "noun"
        words = sorted(set(words))
        random.Random(f"{seed}:held-out:{name}").shuffle(words)
        held_out.update(f"{kind}:{word}" for word in words[: round(share * len(words))])
    return frozenset(held_out)


@functools.lru_cache(maxsize=4)
def pretraining_text(seed: int, n_train: int) -> tuple[frozenset[str], frozenset[str]]:
    """(word forms of the demo's pretraining ``train.tr``, every Turkish sentence it generated).

    Reproduces ``synthetic_en_tr --train n_train --valid 1000 --test 10 --seed seed`` as
    scripts/demo-mlm.sh runs it; its valid and test come first in the stream.
    """
    pairs = generate_corpus(DEMO_MLM_VALID + DEMO_MLM_TEST + n_train, seed)
    sentences = frozenset(turkish for _, turkish in pairs)
    words = frozenset(
        token
        for _, turkish in pairs[DEMO_MLM_VALID + DEMO_MLM_TEST :]
        for token in split_punctuation(turkish)
    )
    return words, sentences


class SentenceSource:
    """Draws annotated sentences for every task and split under the rules they share.

    train: no held-out lexeme; valid/test: at least one. Every word form must occur in the
    pretraining text (when one is given), and no sentence may be a pretraining sentence or
    one this source already gave out (to any task or split).
    """

    def __init__(
        self,
        held_out: frozenset[str],
        pretraining_words: Optional[frozenset[str]],
        pretraining_sentences: frozenset[str],
    ):
        self.held_out = held_out
        self.pretraining_words = pretraining_words
        self.pretraining_sentences = pretraining_sentences
        self.used: set[str] = set()

    def draw(
        self, rng: random.Random, split: str, wanted: Callable[[Clause], bool] = lambda _: True
    ) -> LabelledSentence:
        for _ in range(100_000):
            clause = sample_clause(rng)
            if not wanted(clause):
                continue
            unseen = lexemes(clause) & self.held_out
            if bool(unseen) != (split != "train"):
                continue
            text = clause.turkish()
            if text in self.used or text in self.pretraining_sentences:
                continue
            if self.pretraining_words is not None and not all(
                token in self.pretraining_words for token in split_punctuation(text)
            ):
                continue
            self.used.add(text)
            return annotate(clause)
        raise ValueError(f"no new {split} sentence of the wanted kind in 100,000 draws")


# ------------------------------------------------------------------------------- tasks


def _rng(seed: int, task: str, split: str) -> random.Random:
    # one stream per task and split: valid and test do not depend on the size of train
    return random.Random(f"{seed}:{task}:{split}")


def tagged_sentences(
    source: SentenceSource, seed: int, sizes: dict[str, int]
) -> dict[str, list[LabelledSentence]]:
    """The sentences of the NER and POS files (the same sentences, labelled twice)."""
    out = {}
    for split in SPLITS:
        rng = _rng(seed, "tagging", split)
        out[split] = [source.draw(rng, split) for _ in range(sizes[split])]
    return out


def polarity(clause: Clause) -> str:
    """olumsuz when the verb carries the negation -mA-, olumlu otherwise."""
    return POLARITY_LABELS[int(clause.negative)]


def polarity_sentences(
    source: SentenceSource, seed: int, sizes: dict[str, int]
) -> dict[str, dict[str, list[str]]]:
    """Statements by polarity label; the labels alternate, so the classes differ by at most 1."""
    out: dict[str, dict[str, list[str]]] = {}
    for split in SPLITS:
        rng = _rng(seed, "sentiment", split)
        by_label: dict[str, list[str]] = {label: [] for label in POLARITY_LABELS}
        for index in range(sizes[split]):
            label = POLARITY_LABELS[index % 2]
            # questions are never negated in the grammar: they would give the label away
            sentence = source.draw(
                rng, split, lambda c, label=label: not c.question and polarity(c) == label
            )
            by_label[label].append(sentence.text)
        out[split] = by_label
    return out


def question_word(constituent: Constituent) -> Optional[str]:
    """The question word that replaces a noun phrase in its role and case, or None if none fits.

    kim/kimi/kime ask for people, nereyi/nerede/nereye/nereden for places (and the containers
    koy- puts things into), ne/neyi for the rest; vehicles as goal or source ("otobüse bindi")
    and animal subjects get no question.
    """
    phrase = constituent.phrase
    if phrase is None:
        return None
    kind = ENTITY_TYPE.get(phrase.noun.tr)
    if constituent.role == "subject":
        return "kim" if kind == "PER" else None
    if constituent.role == "object":
        if not phrase.definite:
            return None if kind in ("PER", "LOC") else "ne"
        return {"PER": "kimi", "LOC": "nereyi"}.get(kind, "neyi")
    if kind == "PER":
        return "kime" if constituent.case is Case.DAT else None
    if kind == "LOC" or (constituent.case is Case.DAT and phrase.noun in CONTAINERS):
        return {Case.LOC: "nerede", Case.DAT: "nereye", Case.ABL: "nereden"}[constituent.case]
    return None


def _question(sentence: LabelledSentence, target: Constituent, wh: str) -> str:
    """The statement with the target phrase replaced in situ, as Turkish asks: Dün kim geldi?"""
    words = []
    for role, part in sentence.clause.turkish_constituents():
        words += [wh] if role == target.role else part
    return capitalize_tr(" ".join(words)) + "?"


@dataclass(frozen=True)
class Question:
    text: str
    wh: str  # the question word
    answer: str
    start: int  # character offset of the answer in the paragraph's context


@dataclass(frozen=True)
class Paragraph:
    sentences: tuple[LabelledSentence, ...]
    questions: tuple[Question, ...]

    @property
    def context(self) -> str:
        return " ".join(sentence.text for sentence in self.sentences)


def qa_paragraphs(
    source: SentenceSource, seed: int, split: str, n_questions: int
) -> list[Paragraph]:
    """Paragraphs of 3-5 statements with 1-3 questions each, ``n_questions`` questions in all."""
    rng = _rng(seed, "qa", split)
    paragraphs: list[Paragraph] = []
    asked = 0
    while asked < n_questions:
        sentences: list[LabelledSentence] = []
        for _ in range(rng.randint(3, 5)):
            verbs = {s.clause.verb.tr for s in sentences}
            # a different verb in every sentence: the question's verb finds its one sentence
            sentences.append(
                source.draw(rng, split, lambda c, v=verbs: not c.question and c.verb.tr not in v)
            )
        context = " ".join(sentence.text for sentence in sentences)
        candidates = []
        offset = 0
        for sentence in sentences:
            for constituent in sentence.constituents:
                wh = question_word(constituent)
                if wh is not None:
                    candidates.append((sentence, constituent, wh, offset + constituent.start))
            offset += len(sentence.text) + 1
        if not candidates:
            continue
        rng.shuffle(candidates)
        questions = []
        for sentence, constituent, wh, start in candidates[: rng.randint(1, 3)]:
            if asked == n_questions:
                break
            answer = constituent.text
            if context[start : start + len(answer)] != answer:
                raise AssertionError(f"answer {answer!r} is not at {start} of {context!r}")
            questions.append(Question(_question(sentence, constituent, wh), wh, answer, start))
            asked += 1
        paragraphs.append(Paragraph(tuple(sentences), tuple(questions)))
    return paragraphs


def squad_json(paragraphs: Sequence[Paragraph], split: str) -> dict:
    """SQuAD v1.1, one article per paragraph; ids ``{split}-{paragraph}-{question}``."""
    articles = []
    for number, paragraph in enumerate(paragraphs):
        qas = [
            {
                "id": f"{split}-{number:04d}-{index}",
                "question": question.text,
                # TQuAD writes answer_start as a string: train exercises that reader path
                "answers": [
                    {
                        "text": question.answer,
                        "answer_start": str(question.start) if split == "train" else question.start,
                    }
                ],
            }
            for index, question in enumerate(paragraph.questions)
        ]
        articles.append(
            {
                "title": f"synthetic-{split}-{number:04d}",
                "paragraphs": [{"context": paragraph.context, "qas": qas}],
            }
        )
    return {"version": "1.1", "data": articles}


# ------------------------------------------------------------------------------- writing


def conll_ner(sentences: Sequence[LabelledSentence]) -> str:
    return "".join(
        "".join(f"{token.form}\t{token.entity}\n" for token in sentence.tokens) + "\n"
        for sentence in sentences
    )


def conllu_pos(sentences: Sequence[LabelledSentence], split: str) -> str:
    blocks = []
    for number, sentence in enumerate(sentences, start=1):
        lines = [f"# sent_id = {split}-{number}", f"# text = {sentence.text}"]
        for index, token in enumerate(sentence.tokens, start=1):
            # the last word touches the final punctuation: # text is rebuilt from SpaceAfter
            misc = "SpaceAfter=No" if index == len(sentence.tokens) - 1 else "_"
            columns = [str(index), token.form, token.lemma, token.upos, "_", "_", "_", "_", "_"]
            lines.append("\t".join(columns + [misc]))
        blocks.append("\n".join(lines) + "\n\n")
    return "".join(blocks)


@dataclass(frozen=True)
class LabelledConfig:
    seed: int = 3
    train_sentences: int = 200
    valid_sentences: int = 300
    test_sentences: int = 500
    train_questions: int = 150
    valid_questions: int = 300
    test_questions: int = 300
    held_out_share: float = 0.35
    pretraining_seed: int = 2
    pretraining_sentences: int = 20000  # 0: no pretraining text to check the words against


def _check_labels_seen_in_train(task: str, labels: dict[str, Counter]) -> None:
    # the downstream readers reject a valid/test label that training never shows
    for split in ("valid", "test"):
        unknown = sorted(set(labels[split]) - set(labels["train"]))
        if unknown:
            raise ValueError(
                f"{task}: {split} has labels {unknown} that the training split lacks; "
                "use more training sentences"
            )


def write_labelled(out_dir: str | Path, config: LabelledConfig = LabelledConfig()) -> dict:
    """Write the four tasks' files under ``out_dir`` and return a summary of what they hold."""
    out = Path(out_dir)
    held_out = held_out_lexemes(config.seed, config.held_out_share)
    if config.pretraining_sentences:
        words, pretraining = pretraining_text(config.pretraining_seed, config.pretraining_sentences)
    else:
        words, pretraining = None, frozenset()
    sentence_sizes = {
        "train": config.train_sentences,
        "valid": config.valid_sentences,
        "test": config.test_sentences,
    }
    summary: dict = {"seed": config.seed, "held_out_lexemes": len(held_out)}
    # one source for all tasks: no sentence occurs twice anywhere in the output
    source = SentenceSource(held_out, words, pretraining)

    tagged = tagged_sentences(source, config.seed, sentence_sizes)
    upos = {split: Counter(t.upos for s in tagged[split] for t in s.tokens) for split in SPLITS}
    entities = {
        split: Counter(t.entity[2:] for s in tagged[split] for t in s.tokens if t.entity[0] == "B")
        for split in SPLITS
    }
    _check_labels_seen_in_train("pos", upos)
    _check_labels_seen_in_train("ner", entities)
    train_forms = {t.form for s in tagged["train"] for t in s.tokens}
    (out / "ner").mkdir(parents=True, exist_ok=True)
    (out / "pos").mkdir(parents=True, exist_ok=True)
    for split in SPLITS:
        (out / "ner" / f"{split}.conll").write_text(conll_ner(tagged[split]), encoding="utf-8")
        (out / "pos" / f"{split}.conllu").write_text(
            conllu_pos(tagged[split], split), encoding="utf-8"
        )
        tokens = [t for s in tagged[split] for t in s.tokens]
        summary[f"tagging/{split}"] = {
            "sentences": len(tagged[split]),
            "tokens": len(tokens),
            "tokens_unseen_in_train": sum(t.form not in train_forms for t in tokens),
            "entities": dict(sorted(entities[split].items())),
            "upos": dict(sorted(upos[split].items())),
        }

    polar = polarity_sentences(source, config.seed, sentence_sizes)
    (out / "sentiment").mkdir(parents=True, exist_ok=True)
    for split in SPLITS:
        for label, texts in polar[split].items():
            lines = "".join(text + "\n" for text in texts)
            (out / "sentiment" / f"{split}.{label}").write_text(lines, encoding="utf-8")
        summary[f"sentiment/{split}"] = {label: len(t) for label, t in polar[split].items()}

    question_sizes = {
        "train": config.train_questions,
        "valid": config.valid_questions,
        "test": config.test_questions,
    }
    (out / "qa").mkdir(parents=True, exist_ok=True)
    for split in SPLITS:
        paragraphs = qa_paragraphs(source, config.seed, split, question_sizes[split])
        (out / "qa" / f"{split}.json").write_text(
            json.dumps(squad_json(paragraphs, split), ensure_ascii=False, indent=1) + "\n",
            encoding="utf-8",
        )
        question_words = Counter(q.wh for paragraph in paragraphs for q in paragraph.questions)
        summary[f"qa/{split}"] = {
            "paragraphs": len(paragraphs),
            "questions": sum(question_words.values()),
            "question_words": dict(sorted(question_words.items())),
        }
    return summary


def main(argv: Optional[list[str]] = None) -> dict:
    defaults = LabelledConfig()
    parser = argparse.ArgumentParser(
        description="Write labelled Turkish (NER, POS, polarity, QA) from the demo grammar."
    )
    parser.add_argument("--out-dir", required=True, help="directory for ner/ pos/ sentiment/ qa/")
    parser.add_argument("--seed", type=int, default=defaults.seed, help="seed of the labelled data")
    for split in SPLITS:
        parser.add_argument(
            f"--{split}-sentences",
            type=int,
            default=getattr(defaults, f"{split}_sentences"),
            help=f"{split} sentences of the NER/POS files and of the polarity files",
        )
    for split in SPLITS:
        parser.add_argument(
            f"--{split}-questions",
            type=int,
            default=getattr(defaults, f"{split}_questions"),
            help=f"{split} QA questions",
        )
    parser.add_argument(
        "--held-out-share",
        type=float,
        default=defaults.held_out_share,
        help="share of each word class that training never shows and valid/test always do",
    )
    parser.add_argument(
        "--pretraining-seed",
        type=int,
        default=defaults.pretraining_seed,
        help="seed of the demo's pretraining text (scripts/demo-mlm.sh)",
    )
    parser.add_argument(
        "--pretraining-sentences",
        type=int,
        default=defaults.pretraining_sentences,
        help="its training sentences (DEMO_MLM_SENTENCES); 0: do not check words against it",
    )
    args = parser.parse_args(argv)
    config = LabelledConfig(
        **{name: getattr(args, name) for name in LabelledConfig.__dataclass_fields__}
    )
    summary = write_labelled(args.out_dir, config)
    print(f"wrote labelled Turkish (seed {config.seed}) to {args.out_dir}")
    for key, value in summary.items():
        print(f"  {key}: {value}")
    return summary


if __name__ == "__main__":
    from fairseq_struct.cli_logging import configure_logging

    configure_logging()
    main()
