"""Character CNN word embedder of BERT-ELMo (Polatbilek, section 4.1, after ELMo; design.md §4.3).

char ids (..., max_chars) -> char embeddings -> parallel Conv1d of widths 1-7 (1,056 filters)
-> max over time -> ReLU -> 2 highway layers -> linear projection to the model dimension.
"""

from typing import Sequence, Tuple

import torch
from torch import Tensor, nn

from fairseq_struct.modules.character_vocabulary import PAD

# (width, filters) of design.md §4.3 (Polatbilek, 4.2.2): ELMo's widths with 32 filters of
# width 7 (1,056 in all).
CHARACTER_FILTERS: Tuple[Tuple[int, int], ...] = (
    (1, 32),
    (2, 32),
    (3, 64),
    (4, 128),
    (5, 256),
    (6, 512),
    (7, 32),
)
NUM_CHARACTER_FILTERS = sum(filters for _, filters in CHARACTER_FILTERS)


def format_filter_bank(filters: Sequence[Tuple[int, int]]) -> str:
    """The `--char-filters` form of a bank: "1:32,2:32,3:64,..." (width:filters, ...)."""
    return ",".join(f"{width}:{count}" for width, count in filters)


def parse_filter_bank(text: str) -> Tuple[Tuple[int, int], ...]:
    """ "1:32,2:32,3:64" -> ((1, 32), (2, 32), (3, 64)); a clear error for anything else."""
    bank = []
    for item in text.split(","):
        width, _, count = item.strip().partition(":")
        if not (width.isdigit() and count.isdigit() and int(width) > 0 and int(count) > 0):
            raise ValueError(
                f"--char-filters {text!r}: {item.strip()!r} is not WIDTH:FILTERS with two "
                "positive integers (e.g. 1:32,2:32,3:64)"
            )
        bank.append((int(width), int(count)))
    return tuple(bank)


# Transform-gate bias of Kim et al. (2016)'s char-CNN highway, which ELMo's bilm-tf keeps:
# sigmoid(-2) = 0.12, so at initialisation a highway layer mostly carries its input through
# (Srivastava et al., 2015, recommend a negative bias for this reason).
HIGHWAY_GATE_BIAS = -2.0


class Highway(nn.Module):
    """y = g · f(A x) + (1 - g) · x with g = sigmoid(G x + b_g) and f = ReLU (Polatbilek, 2.3)."""

    def __init__(self, dim: int, gate_bias: float = HIGHWAY_GATE_BIAS) -> None:
        super().__init__()
        self.transform = nn.Linear(dim, dim)
        self.gate = nn.Linear(dim, dim)
        nn.init.constant_(self.gate.bias, gate_bias)

    def forward(self, x: Tensor) -> Tensor:
        g = torch.sigmoid(self.gate(x))
        return g * torch.relu(self.transform(x)) + (1 - g) * x


class CharacterCNNWordEmbedder(nn.Module):
    def __init__(
        self,
        num_characters: int,
        output_dim: int,
        char_embed_dim: int = 16,
        padding_idx: int = PAD,
        filters: Sequence[Tuple[int, int]] = CHARACTER_FILTERS,
        num_highway: int = 2,
        gate_bias: float = HIGHWAY_GATE_BIAS,
    ) -> None:
        super().__init__()
        self.padding_idx = padding_idx
        self.char_embed = nn.Embedding(num_characters, char_embed_dim, padding_idx=padding_idx)
        self.convolutions = nn.ModuleList(
            nn.Conv1d(char_embed_dim, count, kernel_size=width) for width, count in filters
        )
        self.max_width = max(width for width, _ in filters)
        self.num_filters = sum(count for _, count in filters)
        self.highways = nn.ModuleList(
            Highway(self.num_filters, gate_bias) for _ in range(num_highway)
        )
        self.projection = nn.Linear(self.num_filters, output_dim)
        self.output_dim = output_dim

    @property
    def filters(self) -> Tuple[Tuple[int, int], ...]:
        """(width, filters) of each convolution."""
        return tuple((conv.kernel_size[0], conv.out_channels) for conv in self.convolutions)

    def forward(self, char_ids: Tensor) -> Tensor:
        """char_ids (..., max_chars) long -> word embeddings (..., output_dim)."""
        leading = char_ids.shape[:-1]
        chars = char_ids.reshape(-1, char_ids.size(-1))
        if chars.size(1) < self.max_width:
            # The widest filter needs max_width positions to give one output.
            chars = nn.functional.pad(
                chars, (0, self.max_width - chars.size(1)), value=self.padding_idx
            )
        x = self.char_embed(chars).transpose(1, 2)  # (words, embed, chars) for Conv1d
        # Max over time, then ReLU (ELMo's order: the nonlinearity after the pooling).
        features = torch.cat([conv(x).max(dim=-1).values for conv in self.convolutions], dim=-1)
        features = torch.relu(features)
        for highway in self.highways:
            features = highway(features)
        return self.projection(features).view(*leading, self.output_dim)
