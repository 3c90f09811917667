"""Absolute position embeddings of the masked-LM encoders: 1D, BERT2D's 2D, and segments.

BERT2D (Kaya & Tantuğ; design.md §4.2) replaces the 1D table by p_2D = p_word(e_i) + p_sub(s_i):
e_i is the index of the word token i belongs to, s_i its subword id. For a word of m pieces
with n = m - 2 intermediate pieces: one piece -> [0]; otherwise the first piece is 0, the last
1, and intermediate piece j (0-based) gets, with M = `max_intermediate`:
  - uniform (default; the authors' code): 2 + j if n <= M else 2 + round_half_up(j (M-1) / n)
  - paper: 2 + j if n <= M else 2 + floor(j M / n)
  - leftover_as_last: 2 + j if j < M else 1
so ids lie in [0, M + 1] and the subword table has M + 2 rows. With `restart_words`, a pair's
second segment counts its words from 0 again (`[CLS] un ##want [SEP] runn ##ing [SEP]` ->
0 1 1 2 0 0 1), as the published BERT2D checkpoints were trained.
"""

from typing import Optional

import torch
from torch import Tensor, nn

from fairseq_struct.pieces.word_boundaries import WordStructure

POSITION_MODES = ("1d", "2d", "none")
SUBWORD_STRATEGIES = ("uniform", "paper", "leftover_as_last")


def subword_position_ids(
    position_in_word: Tensor, word_length: Tensor, max_intermediate: int, strategy: str
) -> Tensor:
    """BERT2D's s_i for every token (integer arithmetic, no float rounding)."""
    if max_intermediate < 1:
        raise ValueError(f"max_intermediate (M) must be >= 1, got {max_intermediate}")
    intermediate = (word_length - 2).clamp(min=1)  # n; clamped only where it is unused
    j = position_in_word - 1
    if strategy == "uniform":
        # round_half_up(j (M-1) / n) == floor((2 j (M-1) + n) / (2 n)) for j, n >= 0.
        squeezed = 2 + torch.div(
            2 * j * (max_intermediate - 1) + intermediate, 2 * intermediate, rounding_mode="floor"
        )
        middle = torch.where(intermediate <= max_intermediate, 2 + j, squeezed)
    elif strategy == "paper":
        squeezed = 2 + torch.div(j * max_intermediate, intermediate, rounding_mode="floor")
        middle = torch.where(intermediate <= max_intermediate, 2 + j, squeezed)
    elif strategy == "leftover_as_last":
        middle = torch.where(j < max_intermediate, 2 + j, torch.ones_like(j))
    else:
        raise ValueError(f"subword strategy must be one of {SUBWORD_STRATEGIES}, not {strategy!r}")
    last = position_in_word == word_length - 1
    ids = torch.where(last, torch.ones_like(middle), middle)
    return torch.where(position_in_word == 0, torch.zeros_like(ids), ids)


def restarted_word_index(word_index: Tensor, segment_index: Tensor) -> Tensor:
    """Word indices with the second segment's words counted from 0 (its first word is 0)."""
    second = segment_index.bool()
    first_of_second = second.long().argmax(dim=1, keepdim=True)  # 0 where there is none
    offset = word_index.gather(1, first_of_second)
    return torch.where(second, word_index - offset, word_index)


class StructuralPositionEmbedding(nn.Module):
    def __init__(
        self,
        mode: str,
        max_positions: int,
        embed_dim: int,
        max_intermediate: int = 3,
        subword_strategy: str = "uniform",
        num_segments: int = 0,
        restart_words: bool = False,
    ) -> None:
        super().__init__()
        if mode not in POSITION_MODES:
            raise ValueError(f"position mode must be one of {POSITION_MODES}, not {mode!r}")
        if subword_strategy not in SUBWORD_STRATEGIES:
            raise ValueError(
                f"subword strategy must be one of {SUBWORD_STRATEGIES}, not {subword_strategy!r}"
            )
        self.mode = mode
        self.max_positions = max_positions
        self.max_intermediate = max_intermediate
        self.subword_strategy = subword_strategy
        self.restart_words = restart_words
        # Word positions in 2d mode, token positions in 1d mode: max_positions rows, not fairseq's
        # padding_idx + 1 more, so 2d mode adds exactly (M + 2) * embed_dim parameters.
        self.positions: Optional[nn.Embedding] = (
            nn.Embedding(max_positions, embed_dim) if mode != "none" else None
        )
        self.subword_positions: Optional[nn.Embedding] = (
            nn.Embedding(max_intermediate + 2, embed_dim) if mode == "2d" else None
        )
        self.segments: Optional[nn.Embedding] = (
            nn.Embedding(num_segments, embed_dim) if num_segments > 0 else None
        )
        for table in (self.positions, self.subword_positions, self.segments):
            if table is not None:
                nn.init.normal_(table.weight, mean=0.0, std=0.02)  # BERT's initialisation

    def position_ids(self, structure: WordStructure, padding: Optional[Tensor] = None) -> Tensor:
        """(batch, time) row of `positions` per token: the word index in 2d mode, 0 on
        `padding` (True there), whose embeddings the encoder zeroes: padding tokens are words of
        their own, so a padded row's last ones could lie beyond a word table shorter than the
        batch (as the published BERT2D, which gives [PAD] word 0)."""
        if self.mode == "2d":
            ids = structure.word_index
            if self.restart_words:
                ids = restarted_word_index(ids, structure.segment_index)
            return ids if padding is None else ids.masked_fill(padding, 0)
        return torch.arange(
            structure.word_index.shape[1], device=structure.word_index.device
        ).expand_as(structure.word_index)

    def _check_positions(self, ids: Tensor) -> None:
        """A clear error for a sequence longer than the table, read from shapes when possible.

        Token and word positions are both below the sequence length, so a batch no longer than
        the table is fine without looking at the ids; only a longer one (2d mode: more tokens
        than positions, maybe fewer words) needs their maximum, a host synchronisation.
        """
        if ids.size(1) <= self.max_positions:
            return
        highest = int(ids.max())
        if highest >= self.max_positions:
            raise ValueError(
                f"a sequence needs position {highest} but the model has "
                f"{self.max_positions} positions (--max-positions / --tokens-per-sample; 2d "
                "mode: word positions, --max-word-positions where set)"
            )

    def forward(self, structure: WordStructure, padding: Optional[Tensor] = None) -> Tensor:
        """(batch, time, embed_dim): the sum of the position (and segment) embeddings;
        `padding` (batch, time), True at padding tokens, if given."""
        terms = []
        if self.positions is not None:
            ids = self.position_ids(structure, padding)
            self._check_positions(ids)
            terms.append(self.positions(ids))
        if self.subword_positions is not None:
            terms.append(
                self.subword_positions(
                    subword_position_ids(
                        structure.position_in_word,
                        structure.word_length,
                        self.max_intermediate,
                        self.subword_strategy,
                    )
                )
            )
        if self.segments is not None:
            segment_ids = structure.segment_index.clamp(max=self.segments.num_embeddings - 1)
            terms.append(self.segments(segment_ids))
        if not terms:
            raise RuntimeError("StructuralPositionEmbedding with mode 'none' and no segments")
        return sum(terms[1:], terms[0])
