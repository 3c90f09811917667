"""fairseq's `np.compat.long` works under numpy 2 once the plugin is imported."""

import numpy as np
import torch
from fairseq.data import ListDataset, TokenBlockDataset

import fairseq_struct.plugin  # noqa: F401  (installs numpy_compat)


def test_token_block_dataset_with_break_mode_eos():
    sentences = ListDataset([torch.tensor([5, 6, 2]), torch.tensor([7, 2])], np.array([3, 2]))
    blocks = TokenBlockDataset(sentences, sentences.sizes, 10, pad=1, eos=2, break_mode="eos")
    assert [blocks[i].tolist() for i in range(len(blocks))] == [[5, 6, 2], [7, 2]]
