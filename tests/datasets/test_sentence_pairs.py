"""NSP / SOP sentence pairs from documents separated by empty lines."""

import numpy as np
import pytest
import torch
from fairseq.data import ListDataset

from fairseq_struct.datasets.sentence_pairs import SentencePairDataset, document_spans

BOS, EOS = 0, 2


def _sentences(lengths):
    """Sentence k is [100 + k] * (length - 1) + [</s>]; length 1 is an empty line."""
    items = [torch.tensor([100 + k] * (n - 1) + [EOS]) for k, n in enumerate(lengths)]
    return ListDataset(items, np.array(lengths))


LENGTHS = [4, 5, 3, 1, 6, 2, 4, 1, 1, 3, 3, 3]  # documents: 0-2, 4-6, 9-11


def test_document_spans():
    assert document_spans(np.array(LENGTHS)) == [(0, 3), (4, 7), (9, 12)]


def test_sop_pairs_keep_or_swap_consecutive_sentences():
    pairs = SentencePairDataset(_sentences(LENGTHS), "sop", 64, BOS, seed=1, split_path="x")
    assert len(pairs) == 6  # 2 pairs per 3-sentence document
    seen_labels = set()
    for index in range(len(pairs)):
        item = pairs[index].tolist()
        assert item[0] == BOS and item.count(EOS) == 2 and item[-1] == EOS
        cut = item.index(EOS)
        first, second = item[1], item[cut + 1]
        label = pairs.label(index)
        seen_labels.add(label)
        assert second - first == (-1 if label else 1)
        assert len(item) == pairs.size(index)
    assert seen_labels == {0, 1}


def test_nsp_negatives_come_from_another_document():
    lengths = [3] * 4 + [1] + [3] * 4 + [1] + [3] * 4
    pairs = SentencePairDataset(_sentences(lengths), "nsp", 64, BOS, seed=3, split_path="x")
    document = {k: k // 5 for k in range(len(lengths))}
    labels = [pairs.label(i) for i in range(len(pairs))]
    assert 0 < sum(labels) < len(labels)
    for index in range(len(pairs)):
        item = pairs[index].tolist()
        first, second = item[1] - 100, item[item.index(EOS) + 1] - 100
        if pairs.label(index):
            assert document[first] != document[second]
        else:
            assert second == first + 1


def test_long_pairs_are_cut_from_the_longer_sentence_keeping_eos():
    pairs = SentencePairDataset(_sentences([30, 8]), "sop", 20, BOS, seed=0, split_path="x")
    item = pairs[0]
    assert len(item) == 20 == pairs.size(0)
    assert item.tolist().count(EOS) == 2 and int(item[-1]) == EOS


def test_nsp_needs_two_documents():
    with pytest.raises(ValueError, match="at least 2 documents"):
        SentencePairDataset(_sentences([3, 3, 3]), "nsp", 64, BOS, seed=0, split_path="data/train")
