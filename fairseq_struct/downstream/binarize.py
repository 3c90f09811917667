"""Write fine-tuning data as fairseq binarized datasets, the way fairseq-preprocess does.

Each dataset is `{split}.bin`/`{split}.idx` in fairseq's `mmap` format beside the `dict.txt` of
its symbols, so that fairseq's `sentence_prediction` task and the plugin's tasks read it
unchanged; both files are written under temporary names and renamed.
"""

import os
from pathlib import Path
from typing import Iterable, Sequence, Union

import torch
from fairseq.data import Dictionary, indexed_dataset

PathLike = Union[str, Path]


def label_dictionary(labels: Sequence[str]) -> Dictionary:
    """A fairseq dictionary of `labels` in the given order (ids nspecial, nspecial + 1, ...)."""
    dictionary = Dictionary()
    for label in labels:
        dictionary.add_symbol(label)
    return dictionary


def save_dictionary(dictionary: Dictionary, path: PathLike) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    dictionary.save(str(temporary))
    os.replace(temporary, path)


def write_dataset(prefix: PathLike, items: Iterable[Sequence[int]], vocab_size: int) -> int:
    """Write `items` (token id sequences) as `prefix.bin` / `prefix.idx`; returns their count."""
    prefix = Path(prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    temporary = prefix.with_name(prefix.name + ".tmp")
    builder = indexed_dataset.make_builder(
        f"{temporary}.bin", impl="mmap", vocab_size=max(vocab_size, 2)
    )
    count = 0
    for item in items:
        builder.add_item(torch.tensor(list(item), dtype=torch.int64))
        count += 1
    builder.finalize(f"{temporary}.idx")
    os.replace(f"{temporary}.bin", f"{prefix}.bin")
    os.replace(f"{temporary}.idx", f"{prefix}.idx")
    return count
