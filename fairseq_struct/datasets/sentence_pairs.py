"""Sentence pairs for next-sentence prediction (BERT) and sentence-order prediction (ALBERT).

Every sentence with a successor in its document (documents end at the empty lines of stock
`fairseq-preprocess --only-source` data) gives "<s> A </s> B </s>", with label 1 when NSP replaced
B by a sentence of another document or SOP swapped A and B (each half of the time), else 0. The
draws depend on (seed, index) only: a pair is the same in every epoch, as BERT's static data.
"""

from typing import List, Tuple

import numpy as np
import torch
from fairseq.data import FairseqDataset
from torch import Tensor

SENTENCE_OBJECTIVES = ("nsp", "sop")


def document_spans(sizes: np.ndarray) -> List[Tuple[int, int]]:
    """[start, end) sentence index ranges of the documents (empty lines have size 1)."""
    spans, start = [], None
    for index, size in enumerate(sizes):
        if size <= 1:
            if start is not None:
                spans.append((start, index))
            start = None
        elif start is None:
            start = index
    if start is not None:
        spans.append((start, len(sizes)))
    return spans


class SentencePairDataset(FairseqDataset):
    def __init__(
        self,
        sentences: FairseqDataset,
        objective: str,
        max_tokens: int,
        bos: int,
        seed: int,
        split_path: str,
    ) -> None:
        super().__init__()
        if objective not in SENTENCE_OBJECTIVES:
            raise ValueError(f"sentence objective must be one of {SENTENCE_OBJECTIVES}")
        self.sentences = sentences
        self.objective = objective
        self.max_tokens = max_tokens
        self.bos = bos
        sizes = np.asarray(sentences.sizes)
        spans = document_spans(sizes)
        if objective == "nsp" and len(spans) < 2:
            raise ValueError(
                f"{split_path}: next-sentence prediction needs at least 2 documents separated by "
                f"empty lines, found {len(spans)}"
            )
        firsts, document_of = [], []
        for document, (start, end) in enumerate(spans):
            firsts.extend(range(start, end - 1))
            document_of.extend([document] * (end - 1 - start))
        if not firsts:
            raise ValueError(
                f"{split_path}: no document has two consecutive sentences, so there are no "
                "sentence pairs (one sentence per line, documents separated by empty lines)"
            )
        rng = np.random.default_rng((seed, len(sizes)))
        self.first = np.asarray(firsts)
        self.second = self.first + 1
        self.labels = (rng.random(len(self.first)) < 0.5).astype(np.int64)
        if objective == "nsp":
            non_empty = np.concatenate([np.arange(s, e) for s, e in spans])
            sentence_document = np.empty(len(sizes), dtype=np.int64)
            for document, (start, end) in enumerate(spans):
                sentence_document[start:end] = document
            for pair in np.flatnonzero(self.labels):
                while True:  # terminates: at least one other document exists
                    candidate = non_empty[rng.integers(len(non_empty))]
                    if sentence_document[candidate] != document_of[pair]:
                        break
                self.second[pair] = candidate
        lengths = 1 + sizes[self.first] + sizes[self.second]
        self.sizes = np.minimum(lengths, max_tokens)

    def __len__(self) -> int:
        return len(self.first)

    def __getitem__(self, index: int) -> Tensor:
        first = self.sentences[int(self.first[index])]
        second = self.sentences[int(self.second[index])]
        if self.objective == "sop" and self.labels[index]:
            first, second = second, first
        first, second = self._truncate(first, second)
        return torch.cat([first.new_tensor([self.bos]), first, second])

    def _truncate(self, first: Tensor, second: Tensor) -> Tuple[Tensor, Tensor]:
        """Cut one token at a time from the longer sentence (the first on ties), in closed form."""
        first_len, second_len = len(first), len(second)
        excess = 1 + first_len + second_len - self.max_tokens
        if excess <= 0:
            return first, second
        if first_len >= second_len:
            cut = min(excess, first_len - second_len)
            first_len -= cut
        else:
            cut = min(excess, second_len - first_len)
            second_len -= cut
        excess -= cut
        first_len -= (excess + 1) // 2
        second_len -= excess // 2
        # Keep each sentence's closing </s>.
        return (
            torch.cat([first[: first_len - 1], first[-1:]]),
            torch.cat([second[: second_len - 1], second[-1:]]),
        )

    def label(self, index: int) -> int:
        return int(self.labels[index])

    def num_tokens(self, index: int) -> int:
        return int(self.sizes[index])

    def size(self, index: int) -> int:
        return int(self.sizes[index])

    @property
    def supports_prefetch(self) -> bool:
        return False


class SentencePairLabels(FairseqDataset):
    """The NSP/SOP label of every pair, as a dataset that collates to a LongTensor."""

    def __init__(self, pairs: SentencePairDataset) -> None:
        super().__init__()
        self.pairs = pairs

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, index: int) -> int:
        return self.pairs.label(index)

    def collater(self, samples: List[int]) -> Tensor:
        return torch.tensor(samples, dtype=torch.long)
