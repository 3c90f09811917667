"""BERT's masking, of whole words or of single pieces (design.md §4.1 defines it).

The 80/10/10 decision is taken once per word, as fairseq's `--mask-whole-words` does, and each
item is masked by a generator seeded from (seed, epoch, index): alike in every process and on a
restart, differently in every epoch.
"""

from dataclasses import dataclass
from functools import lru_cache
from typing import List, Tuple

import numpy as np
import torch
from fairseq.data import BaseWrapperDataset, RightPadDataset
from torch import Tensor

MASK_STRATEGIES = ("whole_word", "random")


@dataclass(frozen=True)
class MaskingOptions:
    strategy: str = "whole_word"
    mask_prob: float = 0.15
    leave_unmasked_prob: float = 0.1
    random_token_prob: float = 0.1

    def __post_init__(self) -> None:
        if self.strategy not in MASK_STRATEGIES:
            raise ValueError(
                f"mask strategy must be one of {MASK_STRATEGIES}, not {self.strategy!r}"
            )
        if not 0.0 < self.mask_prob < 1.0:
            raise ValueError(f"mask probability must be in (0, 1), got {self.mask_prob}")
        if min(self.leave_unmasked_prob, self.random_token_prob) < 0.0 or (
            self.leave_unmasked_prob + self.random_token_prob > 1.0
        ):
            raise ValueError(
                "leave-unmasked and random-token probabilities must be >= 0 and sum to <= 1, got "
                f"{self.leave_unmasked_prob} and {self.random_token_prob}"
            )


def masking_units(tokens: np.ndarray, word_starts: np.ndarray, strategy: str) -> np.ndarray:
    """Unit number of every token: its word (whole_word) or itself (random)."""
    if strategy == "random":
        return np.arange(len(tokens))
    starts = word_starts.copy()
    starts[0] = True
    return np.cumsum(starts) - 1


def mask_tokens(
    tokens: np.ndarray,
    word_starts: np.ndarray,
    special: np.ndarray,
    options: MaskingOptions,
    mask_idx: int,
    pad_idx: int,
    replacement_ids: np.ndarray,
    rng: np.random.Generator,
) -> Tuple[np.ndarray, np.ndarray]:
    """(source, target) of one sequence: target holds the original token at every target
    position and `pad_idx` elsewhere. `word_starts` and `special` are per token."""
    units = masking_units(tokens, word_starts, options.strategy)
    num_units = int(units[-1]) + 1 if len(units) else 0
    # A unit is a candidate unless it holds a special symbol (specials are one-token words).
    has_special = np.zeros(num_units, dtype=bool)
    np.logical_or.at(has_special, units, special)
    candidates = np.flatnonzero(~has_special)
    num_chosen = min(len(candidates), int(options.mask_prob * len(candidates) + rng.random()))
    chosen = rng.choice(candidates, num_chosen, replace=False)
    decision = rng.random(num_chosen)
    random_cut = options.random_token_prob
    unchanged_cut = random_cut + options.leave_unmasked_prob
    unit_action = np.zeros(num_units, dtype=np.int8)  # 0 untouched, 1 mask, 2 random, 3 keep
    unit_action[chosen] = np.where(
        decision < random_cut, 2, np.where(decision < unchanged_cut, 3, 1)
    )
    action = unit_action[units]
    source = tokens.copy()
    target = np.full_like(tokens, pad_idx)
    is_target = action > 0
    target[is_target] = tokens[is_target]
    source[action == 1] = mask_idx
    to_randomise = action == 2
    source[to_randomise] = rng.choice(replacement_ids, int(to_randomise.sum()))
    return source, target


class MaskedWordsDataset(BaseWrapperDataset):
    """One view ("source" or "target") of the masked copy of a token dataset."""

    def __init__(
        self,
        dataset,
        word_start_lookup: Tensor,
        special_lookup: Tensor,
        options: MaskingOptions,
        mask_idx: int,
        pad_idx: int,
        seed: int,
        view: str,
    ) -> None:
        super().__init__(dataset)
        if view not in ("source", "target"):
            raise ValueError(f"view must be 'source' or 'target', not {view!r}")
        self.word_start_lookup = word_start_lookup.numpy()
        self.special_lookup = special_lookup.numpy()
        self.replacement_ids = np.flatnonzero(~self.special_lookup)
        self.options = options
        self.mask_idx = mask_idx
        self.pad_idx = pad_idx
        self.seed = seed
        self.view = view
        self.epoch = 0

    @property
    def can_reuse_epoch_itr_across_epochs(self) -> bool:
        return True  # only the masks change between epochs, not the sizes

    def set_epoch(self, epoch: int) -> None:
        super().set_epoch(epoch)
        self.epoch = epoch

    def __getitem__(self, index: int) -> Tensor:
        return self._masked(self.seed, self.epoch, index)[0 if self.view == "source" else 1]

    @lru_cache(maxsize=8)
    def _masked(self, seed: int, epoch: int, index: int) -> Tuple[Tensor, Tensor]:
        tokens = self.dataset[index].numpy()
        rng = np.random.default_rng((seed, epoch, index))
        source, target = mask_tokens(
            tokens,
            self.word_start_lookup[tokens],
            self.special_lookup[tokens],
            self.options,
            self.mask_idx,
            self.pad_idx,
            self.replacement_ids,
            rng,
        )
        return torch.from_numpy(source), torch.from_numpy(target)


class WordStartsDataset(BaseWrapperDataset):
    """Per token of the *unmasked* sequence: does it begin a word (bool)."""

    def __init__(self, dataset, word_start_lookup: Tensor) -> None:
        super().__init__(dataset)
        self.word_start_lookup = word_start_lookup

    def __getitem__(self, index: int) -> Tensor:
        return self.word_start_lookup[self.dataset[index]]


class MaskedPositionsDataset(RightPadDataset):
    """The target positions of a batch, as flat indices into its (batch * time) tokens.

    Found by the collater, on the host, from the right-padded targets (the same padding as
    `src_tokens`), so that the criterion picks the masked features with an index of known size:
    a boolean mask on the GPU would make the host wait for the device to learn the count.
    """

    def collater(self, samples: List[Tensor]) -> Tensor:
        targets = super().collater(samples)
        return targets.ne(self.pad_idx).view(-1).nonzero().squeeze(1)


class MostWordsDataset(BaseWrapperDataset):
    """The most words of a sequence in a batch (a host int): Whole-Word Attention's number of
    word slots, counted by the collater so that the model never reads it from the GPU. Wraps
    the `WordStartsDataset` of the batch's sequences."""

    def __getitem__(self, index: int) -> int:
        starts = self.dataset[index]
        # The first token always begins a word (pieces.word_boundaries.word_structure).
        return int(starts.sum()) + int(len(starts) > 0 and not bool(starts[0]))

    def collater(self, samples: List[int]) -> int:
        return max(samples, default=0)
