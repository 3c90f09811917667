"""The work of `downstream.prepare` (the command and its options are there): read a data set,
cut it into the pretraining run's units, and write fairseq's binarized data and the report."""

import argparse
import logging
import random
from collections import Counter
from dataclasses import asdict
from typing import Dict, List, Sequence, Tuple

from fairseq.data import Dictionary

import fairseq_struct
from fairseq_struct.corpus_io import atomic_write_json
from fairseq_struct.downstream import readers
from fairseq_struct.downstream.binarize import (
    label_dictionary,
    save_dictionary,
    write_dataset,
)
from fairseq_struct.downstream.features import (
    CutCounts,
    question_windows,
    sentence_item,
    token_windows,
)
from fairseq_struct.downstream.layout import DEFAULT_MAX_POSITIONS, REPORT_FILE
from fairseq_struct.morph.units import PretrainingUnits, UnitCutter
from fairseq_struct.tagging.iob import is_iob_tag, split_tag, to_iob2

fairseq_struct.register()  # fairseq's repairs, as when fairseq loads the plugin
logger = logging.getLogger("fairseq_struct.downstream.prepare")  # the command's name

SPLITS = ("train", "valid", "test")


# ------------------------------------------------------------------------------ reading


def _read(task: str, paths: Sequence[str], args: argparse.Namespace):
    if task == "sentiment":
        return readers.read_classification(paths, labels=args.labels, tab_separated=args.tsv)
    if len(paths) != 1:
        raise readers.DownstreamDataError(f"{task} takes one file per split, not {len(paths)}")
    if task == "ner":
        return readers.read_conll(paths[0], tag_column=args.tag_column)
    if task == "pos":
        return readers.read_conllu(paths[0])
    return readers.read_squad(paths[0])


def _carve_valid(items: list, task: str, fraction: float, seed: int) -> Tuple[list, list]:
    """Seeded split of the training items; QA questions move with their whole context."""
    if task == "qa":
        contexts = sorted({item.context for item in items})
        random.Random(seed).shuffle(contexts)
        chosen = set(contexts[: max(1, round(fraction * len(contexts)))])
        return [i for i in items if i.context not in chosen], [
            i for i in items if i.context in chosen
        ]
    order = list(range(len(items)))
    random.Random(seed).shuffle(order)
    chosen = set(order[: max(1, round(fraction * len(items)))])
    return (
        [item for index, item in enumerate(items) if index not in chosen],
        [item for index, item in enumerate(items) if index in chosen],
    )


# ------------------------------------------------------------------------------ labels


def _location(item, word: int = 0) -> str:
    lines = getattr(item, "lines", None)
    return f"{item.path}:{lines[word] if lines else getattr(item, 'line', '?')}"


def _ner_tags(split: str, sentences: list, report: Dict[str, object]) -> List[List[str]]:
    """IOB2 tags of every sentence; IOB1 starts and IOBES/BILOU prefixes are converted and
    counted."""
    tagged, converted = [], 0
    for sentence in sentences:
        try:
            tags = to_iob2(sentence.tags)
        except ValueError:
            position = next(p for p, tag in enumerate(sentence.tags) if not is_iob_tag(tag))
            raise readers.DownstreamDataError(
                f"{_location(sentence, position)}: tag {sentence.tags[position]!r} is not "
                "IOB (O, B-X, I-X; IOBES's S-X, E-X and BILOU's U-X, L-X are converted)"
            ) from None
        converted += sum(1 for old, new in zip(sentence.tags, tags) if old != new)
        tagged.append(tags)
    report["tags_converted_to_iob2"] = converted
    return tagged


def _tag_labels(tags: Dict[str, List[List[str]]], ner: bool) -> Tuple[List[str], Dict[str, list]]:
    """The label set of a tagging task and, for each other split, what it has that the training
    split lacks (reported; such labels are never learnt, so they are scored as misses).

    POS: the 17 UD UPOS tags (the reader refuses any other), so that a test treebank may use a
    tag the training one lacks (UD BOUN's SCONJ, which IMST's training split never has). NER:
    O plus B- and I- of every entity type of any split, so that the gold entities of a type the
    training split lacks stay in the scores, as misses.
    """
    if not ner:
        train_tags = {tag for sentence in tags["train"] for tag in sentence}
        unseen = {
            split: sorted({tag for sentence in split_tags for tag in sentence} - train_tags)
            for split, split_tags in tags.items()
        }
        return sorted(readers.UPOS_TAGS), {split: found for split, found in unseen.items() if found}
    types = {
        split: {split_tag(tag)[1] for sentence in split_tags for tag in sentence if tag != "O"}
        for split, split_tags in tags.items()
    }
    all_types = sorted(set().union(*types.values()))
    unseen = {split: sorted(found - types["train"]) for split, found in types.items()}
    # Both B- and I- of every type, so that a model can predict any well-formed entity.
    labels = ["O"] + [f"{prefix}-{kind}" for kind in all_types for prefix in ("B", "I")]
    return labels, {split: found for split, found in unseen.items() if found}


def _check_known(split: str, items: list, labels_of, known: Sequence[str], source=None) -> None:
    """Every label of `items` must be one of the training split's; `source(item)` is the item
    that knows its file and lines (default: the item itself)."""
    allowed = set(known)
    for item in items:
        for position, label in enumerate(labels_of(item)):
            if label not in allowed:
                where = _location(source(item) if source else item, position)
                raise readers.DownstreamDataError(
                    f"{where}: label {label!r} of the {split} split never occurs in the "
                    f"training split (known: {', '.join(known)})"
                )


# ------------------------------------------------------------------------------ writing


def _write_sentiment(data, cutter, dictionary, args, report) -> List[str]:
    labels = sorted({example.label for example in data["train"]})
    label_dict = label_dictionary(labels)
    save_dictionary(label_dict, args.out_dir / "label" / "dict.txt")
    for split, examples in data.items():
        _check_known(split, examples, lambda example: [example.label], labels)
        counts = CutCounts()
        units = cutter.cut([example.text.split() for example in examples])
        items = [sentence_item(words, dictionary, args.max_positions, counts) for words in units]
        write_dataset(args.out_dir / "input0" / split, items, len(dictionary))
        write_dataset(
            args.out_dir / "label" / split,
            ([label_dict.index(e.label), label_dict.eos()] for e in examples),
            len(label_dict),
        )
        report["splits"][split].update(items=len(items), **counts.as_dict())
        report["splits"][split]["label_counts"] = dict(Counter(e.label for e in examples))
    return labels


def _write_tagging(data, cutter, dictionary, args, report) -> List[str]:
    ner = args.task == "ner"
    tags = {
        split: (
            _ner_tags(split, sentences, report["splits"][split])
            if ner
            else [list(sentence.tags) for sentence in sentences]
        )
        for split, sentences in data.items()
    }
    labels, unseen = _tag_labels(tags, ner)
    report["labels_not_in_training"] = unseen
    for split, found in unseen.items():
        logger.warning(
            "the %s split has %s that the training split never has: %s (never learnt, they "
            "count as misses in the scores)",
            split,
            "entity types" if ner else "tags",
            ", ".join(found),
        )
    label_dict = label_dictionary(labels)
    save_dictionary(label_dict, args.out_dir / "labels" / "dict.txt")
    for split, sentences in data.items():
        counts = CutCounts()
        units = cutter.cut([sentence.words for sentence in sentences])
        windows = [
            window
            for index, (words, sentence_tags) in enumerate(zip(units, tags[split]))
            for window in token_windows(
                index, words, sentence_tags, dictionary, args.max_positions, counts
            )
        ]
        write_dataset(args.out_dir / "input0" / split, (w.tokens for w in windows), len(dictionary))
        write_dataset(
            args.out_dir / "labels" / split,
            ([label_dict.index(label) for label in w.labels] for w in windows),
            len(label_dict),
        )
        report["splits"][split].update(
            sentences=len(sentences),
            words=sum(len(sentence.words) for sentence in sentences),
            windows=len(windows),
            **counts.as_dict(),
        )
    return labels


def _write_qa(data, cutter, dictionary, args, report) -> List[str]:
    max_length = min(args.max_length, args.max_positions)
    for split, examples in data.items():
        counts = CutCounts()
        cut = question_windows(
            examples,
            cutter,
            dictionary,
            max_length,
            args.doc_stride,
            args.max_query_length,
            counts,
        )
        features = cut.windows
        context_of = {window.question_id: window.context for window in features}
        write_dataset(
            args.out_dir / "input0" / split, (f.tokens for f in features), len(dictionary)
        )
        write_dataset(args.out_dir / "spans" / split, ([f.start, f.end] for f in features), 2)
        atomic_write_json(
            args.out_dir / f"{split}.qa.json",
            {
                "contexts": cut.contexts,
                "questions": {
                    str(e.id): {
                        "context": context_of[str(e.id)],
                        "answers": [a.text for a in e.answers],
                    }
                    for e in examples
                },
                "features": [
                    {
                        "question": f.question_id,
                        "context_offset": f.context_offset,
                        "spans": f.unit_spans,
                    }
                    for f in features
                ],
            },
        )
        report["splits"][split].update(
            questions=len(examples),
            windows=len(features),
            windows_with_answer=sum(1 for f in features if f.start > 0),
            **counts.as_dict(),
        )
    return []


WRITERS = {
    "sentiment": _write_sentiment,
    "ner": _write_tagging,
    "pos": _write_tagging,
    "qa": _write_qa,
}


def prepare(args: argparse.Namespace) -> Dict[str, object]:
    units = PretrainingUnits.from_data_dir(args.pretraining_data)
    if args.max_positions is None:
        args.max_positions = units.max_tokens or DEFAULT_MAX_POSITIONS
    cutter = UnitCutter(units, args.workers)
    dictionary: Dictionary = units.load_dictionary()
    data: Dict[str, list] = {}
    report: Dict[str, object] = {
        "task": args.task,
        "pretraining_data": str(args.pretraining_data.resolve()),
        "units": units.units,
        "mode": units.mode,
        "lang": units.lang,
        "tokens_are_words": units.tokens_are_words,
        "max_positions": args.max_positions,
        "splits": {},
    }
    for split in SPLITS:
        paths = getattr(args, split)
        if paths is None:
            continue
        items, read_report = _read(args.task, paths, args)
        data[split] = items
        report["splits"][split] = {"read": asdict(read_report)}
    if "valid" not in data:
        data["train"], data["valid"] = _carve_valid(
            data["train"], args.task, args.valid_fraction, args.split_seed
        )
        report["splits"]["valid"] = {
            "read": f"{args.valid_fraction} of the training data (seed {args.split_seed})"
        }
    for split, items in data.items():
        if not items:
            raise readers.DownstreamDataError(f"the {split} split has no usable item")
    if units.tokens_are_words:
        dictionary = _with_unseen_words(dictionary, data, cutter, args.task)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    save_dictionary(dictionary, args.out_dir / "input0" / "dict.txt")
    report["labels"] = WRITERS[args.task](data, cutter, dictionary, args, report)
    if args.task == "qa":
        report.update(
            max_length=min(args.max_length, args.max_positions),
            doc_stride=args.doc_stride,
            max_query_length=args.max_query_length,
        )
    atomic_write_json(args.out_dir / REPORT_FILE, report)
    return report


def _with_unseen_words(dictionary: Dictionary, data, cutter: UnitCutter, task: str) -> Dictionary:
    """Words mode: the pretraining dictionary plus every new word, appended (ids unchanged).

    BERT-ELMo embeds a word from its characters, so a word the pretraining text never had still
    gets its own embedding instead of <unk>.
    """
    texts: List[List[str]] = []
    for items in data.values():
        for item in items:
            if task == "sentiment":
                texts.append(item.text.split())
            elif task == "qa":
                texts.extend([item.question.split(), item.context.split()])
            else:
                texts.append(list(item.words))
    extended = Dictionary.load(str(cutter.units.dictionary_path))
    for sentence in cutter.cut(texts):
        for word in sentence:
            for unit in word:
                if extended.index(unit) == extended.unk():
                    extended.add_symbol(unit, n=0)
    return extended
