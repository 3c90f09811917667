"""How `fetch` turns each published format into the files `downstream.prepare` reads, in a
directory of its own (`{split}.conll`, `{split}.conllu`, `{split}.json` or one file per class).

Every conversion reads the published files with the project's readers (so a file they refuse
is refused here, naming its line), writes the converted files, and returns what it counted for
each split: read, skipped, repaired, dropped, added.
"""

import random
import shutil
import tempfile
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Dict, List, Mapping, Sequence, Tuple

from fairseq_struct.corpus_io import atomic_write_lines
from fairseq_struct.downstream import readers
from fairseq_struct.downstream.readers import DownstreamDataError, TaggedSentence
from fairseq_struct.downstream_sets.catalog import DataSet
from fairseq_struct.tagging.iob import is_iob_tag, split_tag, to_iob2

SplitReport = Dict[str, object]
Conversion = Callable[[DataSet, Mapping[str, Path], Path], Dict[str, SplitReport]]


def _check_size(dataset: DataSet, split: str, path: Path, found: int) -> None:
    expected = dataset.expected.get(split)
    if expected is not None and found != expected:
        raise DownstreamDataError(
            f"{path}: {found:,} {dataset.unit}, but {dataset.name}'s {split} split is published "
            f"with {expected:,}; the file differs from the release the catalogue names "
            f"({dataset.source.homepage})"
        )


# ------------------------------------------------------------------------------ NER


def _iob2_tags(sentence: TaggedSentence, tags: Sequence[str]) -> List[str]:
    try:
        return to_iob2(tags)
    except ValueError as error:
        position = next(p for p, tag in enumerate(tags) if not is_iob_tag(tag))
        raise DownstreamDataError(f"{sentence.path}:{sentence.lines[position]}: {error}") from None


def _entities(sentences: Sequence[TaggedSentence], tag_lists) -> Dict[str, int]:
    counts: Counter = Counter()
    for sentence, tags in zip(sentences, tag_lists):
        iob2 = _iob2_tags(sentence, tags)
        counts.update(split_tag(tag)[1] for tag in iob2 if tag.startswith("B-"))
    return dict(sorted(counts.items()))


def _mapped(sentence: TaggedSentence, tag_map: Mapping[str, str]) -> Tuple[str, ...]:
    """The sentence's tags with each entity type replaced by `tag_map`'s, prefixes kept."""
    tags = []
    for position, tag in enumerate(sentence.tags):
        prefix, kind = tag[:2], tag[2:]
        if tag != "O" and (prefix[1:] != "-" or kind not in tag_map):
            raise DownstreamDataError(
                f"{sentence.path}:{sentence.lines[position]}: tag {tag!r} has no coarse class "
                f"(the fine types: {', '.join(sorted(tag_map))})"
            )
        tags.append(tag if tag == "O" else prefix + tag_map[kind])
    return tuple(tags)


def _write_conll(path: Path, sentences: Sequence[Tuple[Sequence[str], Sequence[str]]]) -> None:
    def lines():
        for index, (words, tags) in enumerate(sentences):
            if index:
                yield ""
            yield from (f"{word}\t{tag}" for word, tag in zip(words, tags))

    atomic_write_lines(path, lines())


def _convert_ner(
    dataset: DataSet, files: Mapping[str, Path], out: Path, germeval: bool
) -> Dict[str, SplitReport]:
    tag_map = dataset.options.get("tag_map")
    report: Dict[str, SplitReport] = {}
    for split, filename in dataset.splits.items():
        path = files[filename]
        sentences, read = readers.read_conll(path, germeval=germeval or None)
        _check_size(dataset, split, path, len(sentences))
        tags = [_mapped(s, tag_map) if tag_map else s.tags for s in sentences]
        _write_conll(
            out / dataset.converted_files(split)[0], [(s.words, t) for s, t in zip(sentences, tags)]
        )
        report[split] = {
            "source": filename,
            "sentences": len(sentences),
            "tokens": sum(len(s.words) for s in sentences),
            "entities": _entities(sentences, tags),
            "read": asdict(read),
        }
    return report


def convert_conll_ner(dataset: DataSet, files: Mapping[str, Path], out: Path):
    """CoNLL `token tag` files (tab- or space-separated, CRLF or LF, any IOB scheme) to
    `{split}.conll` with `token<TAB>tag` lines; `options["tag_map"]` maps entity types."""
    return _convert_ner(dataset, files, out, germeval=False)


def convert_germeval(dataset: DataSet, files: Mapping[str, Path], out: Path):
    """GermEval 2014's `index token outer inner` files to `{split}.conll` of the outer tags."""
    return _convert_ner(dataset, files, out, germeval=True)


# ------------------------------------------------------------------------------ POS and QA


def convert_conllu_copy(dataset: DataSet, files: Mapping[str, Path], out: Path):
    """CoNLL-U treebanks, checked by reading them and copied byte for byte."""
    report: Dict[str, SplitReport] = {}
    for split, filename in dataset.splits.items():
        path = files[filename]
        sentences, read = readers.read_conllu(path)
        # Sentences are counted as published: one made only of skipped lines still counts.
        published = sum(1 for line in readers.read_text_lines(path) if line.startswith("# sent_id"))
        _check_size(dataset, split, path, published or len(sentences))
        shutil.copyfile(path, out / dataset.converted_files(split)[0])
        report[split] = {
            "source": filename,
            "sentences": len(sentences),
            "words": sum(len(s.words) for s in sentences),
            "read": asdict(read),
        }
    return report


def convert_squad_copy(dataset: DataSet, files: Mapping[str, Path], out: Path):
    """SQuAD v1.1 JSON files, checked by reading them and copied byte for byte."""
    report: Dict[str, SplitReport] = {}
    for split, filename in dataset.splits.items():
        path = files[filename]
        examples, read = readers.read_squad(path, keep_unanswered=True)
        _check_size(dataset, split, path, len(examples))
        shutil.copyfile(path, out / dataset.converted_files(split)[0])
        report[split] = {
            "source": filename,
            "questions": len(examples),
            "answers": sum(len(example.answers) for example in examples),
            "contexts": len({example.context for example in examples}),
            "read": asdict(read),
        }
    return report


# ------------------------------------------------------------------------------ sentiment


def _hub_rows(path: Path, columns: Sequence[str]) -> Dict[str, List[str]]:
    """The columns of a published CSV file as the `datasets` library reads it, every field a
    string as written (no "NA" or "null" turned into a missing value)."""
    try:
        import datasets
    except ImportError:
        raise DownstreamDataError(
            f"{path}: reading Hugging Face data sets needs the `datasets` library: pip install "
            "'fairseq-struct[hf]'"
        ) from None
    with tempfile.TemporaryDirectory() as cache:
        table = datasets.load_dataset(
            "csv",
            data_files={"rows": str(path)},
            split="rows",
            na_filter=False,
            keep_in_memory=True,
            cache_dir=cache,
        )
    missing = [column for column in columns if column not in table.column_names]
    if missing:
        raise DownstreamDataError(
            f"{path}:1: no column {', '.join(missing)} in the header (it has "
            f"{', '.join(table.column_names)})"
        )
    return {column: [str(value) for value in table[column]] for column in columns}


def _upsampled(texts: List[str], target: int, rng: random.Random) -> List[str]:
    """`texts` and as many random draws (with replacement) from them as reach `target`."""
    return texts + rng.choices(texts, k=max(0, target - len(texts)))


def convert_sentiment_csv(dataset: DataSet, files: Mapping[str, Path], out: Path):
    """A `text,label` CSV per split to one file per class (`{split}.{label}`, a text a line).

    Options: `labels` (published label -> class name), `drop` (published labels left out),
    `valid_fraction` and `seed` (a seeded share of the training rows becomes the validation
    split, before any up-sampling, so that no copy of a validation row is trained on) and
    `upsample` (splits whose smaller classes are drawn again at random, seeded, up to the
    largest). A line break inside a text becomes a space: the class files hold a text a line.
    """
    options = dataset.options
    names: Mapping[str, str] = options["labels"]
    dropped_labels = set(options.get("drop", ()))
    rng = random.Random(options["seed"])
    by_split: Dict[str, Dict[str, List[str]]] = {}
    report: Dict[str, SplitReport] = {}
    for split, filename in dataset.splits.items():
        path = files[filename]
        columns = _hub_rows(path, ("text", "label"))
        _check_size(dataset, split, path, len(columns["label"]))
        classes: Dict[str, List[str]] = {names[label]: [] for label in names}
        counts: Counter = Counter()
        for number, (text, label) in enumerate(zip(columns["text"], columns["label"]), 1):
            if label not in names:
                raise DownstreamDataError(
                    f"{path}: data row {number}: label {label!r} is not one of "
                    f"{', '.join(names)}"
                )
            counts[f"read {label}"] += 1
            if label in dropped_labels:
                counts[f"dropped {label}"] += 1
                continue
            if not text.strip():
                counts["empty text skipped"] += 1
                continue
            if "\n" in text or "\r" in text:
                counts["line breaks inside a text replaced by spaces"] += 1
                text = " ".join(text.splitlines())
            classes[names[label]].append(text)
        by_split[split] = {name: texts for name, texts in classes.items() if texts}
        report[split] = {"source": filename, **dict(counts), **_repeats(by_split, split)}
    fraction = options.get("valid_fraction")
    if fraction and "valid" not in by_split:
        by_split["train"], by_split["valid"] = _carve(by_split["train"], fraction, rng)
        report["valid"] = {"source": f"{fraction:.0%} of {dataset.splits['train']}, seeded"}
    for split in options.get("upsample", ()):
        largest = max(len(texts) for texts in by_split[split].values())
        for name, texts in by_split[split].items():
            by_split[split][name] = _upsampled(texts, largest, rng)
            report[split][f"{name} up-sampled"] = len(by_split[split][name]) - len(texts)
    for split, classes in by_split.items():
        for name, texts in classes.items():
            atomic_write_lines(out / f"{split}.{name}", texts)
        report[split]["written"] = {name: len(texts) for name, texts in classes.items()}
    return {split: report[split] for split in ("train", "valid", "test") if split in report}


def _repeats(by_split: Dict[str, Dict[str, List[str]]], split: str) -> Dict[str, int]:
    """Texts kept as published though they repeat: within the split, and (test) from train."""
    texts = [text for texts in by_split[split].values() for text in texts]
    counts = {"repeated texts kept": len(texts) - len(set(texts))}
    if split != "train" and "train" in by_split:
        train = {text for texts in by_split["train"].values() for text in texts}
        counts["texts also in train kept"] = len(set(texts) & train)
    return counts


def _carve(
    classes: Dict[str, List[str]], fraction: float, rng: random.Random
) -> Tuple[Dict[str, List[str]], Dict[str, List[str]]]:
    rows = [(name, index) for name, texts in classes.items() for index in range(len(texts))]
    chosen = set(rng.sample(rows, max(1, round(fraction * len(rows)))))
    kept = {
        name: [t for i, t in enumerate(texts) if (name, i) not in chosen]
        for name, texts in classes.items()
    }
    carved = {
        name: [t for i, t in enumerate(texts) if (name, i) in chosen]
        for name, texts in classes.items()
    }
    return kept, carved


CONVERSIONS: Dict[str, Conversion] = {
    "conll_ner": convert_conll_ner,
    "germeval": convert_germeval,
    "conllu_copy": convert_conllu_copy,
    "squad_copy": convert_squad_copy,
    "sentiment_csv": convert_sentiment_csv,
}
