"""fairseq-struct's masked-LM encoders (BERT2D, BERT-ELMo, RoBERTa) in plain torch for transformers.

Written into a model directory by `fairseq-struct export-hf` and loaded from there with
`trust_remote_code=True` (torch and transformers only, never fairseq). The forward pass is
fairseq's, operation by operation, checked against it by the export.

    from transformers import AutoModelForMaskedLM, AutoTokenizer
    tokenizer = AutoTokenizer.from_pretrained("hf/bert2d", trust_remote_code=True)
    model = AutoModelForMaskedLM.from_pretrained("hf/bert2d", trust_remote_code=True).eval()
    logits = model(**tokenizer(["ev￭ler￭de kal￭dı ."], return_tensors="pt")).logits
"""

import math
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from transformers import PreTrainedModel
from transformers.modeling_outputs import (
    BaseModelOutput,
    MaskedLMOutput,
    SequenceClassifierOutput,
    TokenClassifierOutput,
)

from .configuration_struct_encoder import SUBWORD_STRATEGIES, StructEncoderConfig

# ----------------------------------------------------------------------------- small pieces


def gelu(x: Tensor) -> Tensor:
    """fairseq's gelu: the exact (erf) GELU computed in fp32."""
    return F.gelu(x.float()).type_as(x)


def gelu_accurate(x: Tensor) -> Tensor:
    """fairseq's gelu_accurate (the tanh approximation)."""
    return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * torch.pow(x, 3))))


ACTIVATIONS: Dict[str, Callable[[Tensor], Tensor]] = {
    "relu": F.relu,
    "gelu": gelu,
    "gelu_accurate": gelu_accurate,
    "gelu_fast": gelu_accurate,
    "tanh": torch.tanh,
    "linear": lambda x: x,
}
# Copied from fairseq_struct.modules.character_vocabulary.PAD
PAD = 0  # the character id of padding (the id of no character)
# Copied from fairseq_struct.tagging.iob.OUTSIDE
OUTSIDE = "O"


# Copied from fairseq_struct.pieces.word_boundaries.word_structure_tensors with word_structure_tensors->word_structure
def word_structure(
    word_starts: Tensor, tokens: Tensor, eos: int
) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    """Per token (batch, time): word index, position in the word, word length in tokens, and
    segment (0 up to and including the first </s>, 1 after). Padding tokens are one-token
    words; a </s> closes its word (the token after it begins one)."""
    time = word_starts.shape[1]
    positions = torch.arange(time, device=word_starts.device).expand_as(word_starts)
    starts = word_starts.clone()
    starts[:, 0] = True  # a sequence always begins a word, whatever its first token
    starts[:, 1:] |= tokens[:, :-1].eq(eos)
    word_index = starts.long().cumsum(dim=1) - 1
    word_start_position = torch.where(starts, positions, 0).cummax(dim=1).values
    ends = torch.ones_like(starts)
    ends[:, :-1] = starts[:, 1:]
    last = torch.full_like(positions, time - 1)
    word_end_position = (
        torch.where(ends, positions, last).flip(dims=[1]).cummin(dim=1).values.flip(dims=[1])
    )
    is_eos = tokens.eq(eos).long()
    # Tokens after the first </s> are segment 1 (the first </s> itself closes segment 0).
    segment_index = ((is_eos.cumsum(dim=1) - is_eos) > 0).long()
    return (
        word_index,
        positions - word_start_position,
        word_end_position - word_start_position + 1,
        segment_index,
    )


# Copied from fairseq_struct.modules.structural_position_embedding.restarted_word_index
def restarted_word_index(word_index: Tensor, segment_index: Tensor) -> Tensor:
    """Word indices with segment 1's words counted from 0 (its first word is 0)."""
    second = segment_index.bool()
    first_of_second = second.long().argmax(dim=1, keepdim=True)  # 0 where there is none
    offset = word_index.gather(1, first_of_second)
    return torch.where(second, word_index - offset, word_index)


# Copied from fairseq_struct.modules.structural_position_embedding.subword_position_ids
def subword_position_ids(
    position_in_word: Tensor, word_length: Tensor, max_intermediate: int, strategy: str
) -> Tensor:
    """BERT2D's subword id s_i of every token (Kaya & Tantuğ; integer arithmetic, no floats).

    One-piece word: 0. Otherwise first piece 0, last piece 1, intermediate piece j of n:
    uniform 2 + j if n <= M else 2 + round_half_up(j (M-1) / n); paper 2 + j if n <= M else
    2 + floor(j M / n); leftover_as_last 2 + j if j < M else 1.
    """
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


# ----------------------------------------------------------------------------- embeddings


class StructPositionEmbedding(nn.Module):
    """The sum of the position (1D, 2D or fairseq's learned) and segment embeddings."""

    def __init__(self, config: StructEncoderConfig) -> None:
        super().__init__()
        self.mode = config.position_embedding
        self.padding_idx = config.pad_token_id
        self.max_intermediate = config.max_intermediate_subwords
        self.subword_strategy = config.subword_id_strategy
        dim = config.hidden_size
        self.positions = (
            nn.Embedding(config.max_position_embeddings, dim) if self.mode != "none" else None
        )
        self.subword_positions = (
            nn.Embedding(config.max_intermediate_subwords + 2, dim) if self.mode == "2d" else None
        )
        self.segments = nn.Embedding(config.num_segments, dim) if config.num_segments > 0 else None
        self.restart_words = config.restart_word_positions

    def position_ids(
        self,
        tokens: Tensor,
        word_index: Tensor,
        segment_index: Tensor,
        padding: Optional[Tensor] = None,
    ) -> Tensor:
        if self.mode == "2d":  # p_word(e_i): the word index, not the token index
            if self.restart_words:
                word_index = restarted_word_index(word_index, segment_index)
            # Padding tokens are words of their own: word 0 (zeroed later), as fairseq, so that
            # a padded row stays inside a word table shorter than the batch.
            return word_index if padding is None else word_index.masked_fill(padding, 0)
        if self.mode == "fairseq_learned":
            # fairseq's utils.make_positions: padding_idx + 1, + 2, ...; padding at padding_idx.
            real = tokens.ne(self.padding_idx).int()
            return (torch.cumsum(real, dim=1).type_as(real) * real).long() + self.padding_idx
        return torch.arange(tokens.size(1), device=tokens.device).expand_as(tokens)

    def forward(
        self,
        tokens: Tensor,
        word_index: Tensor,
        position_in_word: Tensor,
        word_length: Tensor,
        segment_index: Tensor,
        segments: Optional[Tensor] = None,
        padding: Optional[Tensor] = None,
    ) -> Tensor:
        """`segment_index`: fairseq's segments (after the first </s>), which restart the 2D
        word positions; `segments`: the rows of the segment embedding (by default the same);
        `padding`: True at padding tokens."""
        terms = []
        if self.positions is not None:
            ids = self.position_ids(tokens, word_index, segment_index, padding)
            # Positions stay below T (+ padding_idx + 1 for fairseq's table): only a longer
            # sequence needs its largest id read (a host synchronisation on a GPU).
            bound = ids.size(1) + (self.padding_idx + 1 if self.mode == "fairseq_learned" else 0)
            rows = self.positions.num_embeddings
            if bound > rows and int(ids.max()) >= rows:
                raise ValueError(
                    f"a sequence needs position {int(ids.max())} but the model has {rows} "
                    "positions (fairseq's --max-positions; BERT2D: word positions, "
                    "--max-word-positions where set)"
                )
            terms.append(self.positions(ids))
        if self.subword_positions is not None:
            terms.append(
                self.subword_positions(
                    subword_position_ids(
                        position_in_word, word_length, self.max_intermediate, self.subword_strategy
                    )
                )
            )
        if self.segments is not None:
            rows = segment_index if segments is None else segments
            terms.append(self.segments(rows.clamp(max=self.segments.num_embeddings - 1)))
        return sum(terms[1:], terms[0])


class Highway(nn.Module):
    """y = g · ReLU(A x) + (1 - g) · x, g = sigmoid(G x + b_g) (BERT-ELMo's char CNN)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.transform = nn.Linear(dim, dim)
        self.gate = nn.Linear(dim, dim)

    # Copied from fairseq_struct.modules.character_cnn.Highway.forward
    def forward(self, x: Tensor) -> Tensor:
        g = torch.sigmoid(self.gate(x))
        return g * torch.relu(self.transform(x)) + (1 - g) * x


class CharacterCNN(nn.Module):
    """char ids -> embeddings -> Conv1d per width -> max over time -> ReLU -> highways -> linear."""

    def __init__(self, config: StructEncoderConfig) -> None:
        super().__init__()
        self.padding_idx = PAD
        self.char_embed = nn.Embedding(config.num_characters, config.char_embed_dim, padding_idx=0)
        self.convolutions = nn.ModuleList(
            nn.Conv1d(config.char_embed_dim, filters, kernel_size=width)
            for width, filters in config.char_filters
        )
        self.max_width = max(width for width, _ in config.char_filters)
        num_filters = sum(filters for _, filters in config.char_filters)
        self.highways = nn.ModuleList(Highway(num_filters) for _ in range(config.num_highway))
        self.projection = nn.Linear(num_filters, config.hidden_size)
        self.output_dim = config.hidden_size

    # Copied from fairseq_struct.modules.character_cnn.CharacterCNNWordEmbedder.forward
    def forward(self, char_ids: Tensor) -> Tensor:
        """char_ids (..., max_chars) long -> word embeddings (..., hidden_size)."""
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


# Copied from fairseq_struct.models.bert_elmo.trim_padding
def trim_padding(characters: Tensor, max_filter_width: int) -> Tensor:
    """Drop the padding columns beyond `max_filter_width` past the longest word: they cannot
    change a max over time (the same embeddings, faster)."""
    longest = int(characters.ne(PAD).sum(dim=1).max()) if characters.numel() else 0
    return characters[:, : min(characters.size(1), longest + max_filter_width)]


class CharacterWordEmbedding(nn.Module):
    """BERT-ELMo's token embedding: each dictionary symbol through the character CNN.

    `word_characters` (vocab, max_word_chars) holds each symbol's character ids as the checkpoint
    spelled them ([begin, c_1..c_k, end, pad...], ids 0-3 pad/unk/begin/end, then the sorted
    `character_code_points`).
    """

    def __init__(self, config: StructEncoderConfig) -> None:
        super().__init__()
        self.embedding_dim = config.hidden_size
        self.embedder = CharacterCNN(config)
        self.register_buffer(
            "word_characters", torch.zeros(config.vocab_size, config.max_word_chars).long()
        )
        self.register_buffer("character_code_points", torch.zeros(config.num_characters - 4).long())

    # Copied from fairseq_struct.models.bert_elmo.DictionaryCharacterEmbedding.forward
    def forward(self, tokens: Tensor) -> Tensor:
        if self.embeds_distinct_words(tokens):
            # Each distinct word of the batch goes through the CNN once, no wider than needed.
            words, inverse = torch.unique(tokens, return_inverse=True)
            characters = trim_padding(self.word_characters[words], self.embedder.max_width)
            return self.embedder(characters)[inverse]
        # Fixed shapes, no host synchronisation: every token at the full character width.
        return self.embedder(self.word_characters[tokens.reshape(-1)]).view(
            tokens.shape + (self.embedding_dim,)
        )

    # Copied from fairseq_struct.models.bert_elmo.DictionaryCharacterEmbedding.embeds_distinct_words
    @staticmethod
    def embeds_distinct_words(tokens: Tensor) -> bool:
        """Deduplicate on the CPU only (on an accelerator, finding the distinct words would be a
        host synchronisation); both give the same embeddings."""
        return tokens.device.type == "cpu"


# ----------------------------------------------------------------------------- attention


# Copied from fairseq_struct.modules.relative_position._bucket_table
def _bucket_table(max_relative_position: int, length: int, device: torch.device) -> Tensor:
    positions = torch.arange(length, device=device)
    distance = positions.unsqueeze(0) - positions.unsqueeze(1)
    k = max_relative_position
    return distance.clamp(-k, k) + k


class RelativePositionEmbeddings(nn.Module):
    """Shaw et al.'s a^K, a^V tables (2k+1, head_dim); key j seen from query i: clip(j-i, ±k)."""

    def __init__(self, max_relative_position: int, head_dim: int) -> None:
        super().__init__()
        self.max_relative_position = max_relative_position
        num_buckets = 2 * max_relative_position + 1
        self.relative_keys = nn.Parameter(torch.zeros(num_buckets, head_dim))
        self.relative_values = nn.Parameter(torch.zeros(num_buckets, head_dim))

    # Copied from fairseq_struct.modules.relative_position.RelativePositionEmbeddings.num_buckets
    @property
    def num_buckets(self) -> int:
        return 2 * self.max_relative_position + 1

    def bucket_index(self, length: int, device: torch.device) -> Tensor:
        """(length, length) table of clip(j - i, -k, k) + k."""
        return _bucket_table(self.max_relative_position, length, device)

    # Copied from fairseq_struct.modules.relative_position.RelativePositionEmbeddings.key_logits
    def key_logits(self, query: Tensor, bucket_index: Tensor) -> Tensor:
        """q_i · a^K_ij (eq. 4 of Shaw et al.): (..., T_q, d) -> (..., T_q, T_k)."""
        per_bucket = torch.matmul(query, self.relative_keys.transpose(0, 1))
        index = bucket_index.expand(query.shape[:-2] + bucket_index.shape)
        return per_bucket.gather(-1, index)

    # Copied from fairseq_struct.modules.relative_position.RelativePositionEmbeddings.value_term
    def value_term(self, attn_probs: Tensor, bucket_index: Tensor) -> Tensor:
        """Σ_j α_ij a^V_ij (eq. 3): the weights summed per bucket (in fp32), then a matmul."""
        index = bucket_index.expand(attn_probs.shape)
        # The edge buckets sum up to T_k weights: accumulated in fp32, as a half-precision sum
        # of many small terms loses them.
        bucket_probs = attn_probs.new_zeros(
            attn_probs.shape[:-1] + (self.num_buckets,), dtype=torch.float32
        )
        bucket_probs.scatter_add_(-1, index, attn_probs.float())
        return torch.matmul(bucket_probs.type_as(self.relative_values), self.relative_values)


# Copied from fairseq_struct.modules.whole_word_attention.average_words
def average_words(
    tokens: Tensor, word_index: Tensor, key_padding_mask: Optional[Tensor], num_words: int
) -> Tuple[Tensor, Tensor, Tensor]:
    """eq. 8: x̂_j = mean of the x_i with F(i) = j, as scatter-adds (linear in T): the word
    vectors (B, num_words, C), the word sizes (B, num_words) in tokens (0 for an empty slot) and
    the word index with padding tokens sent to word 0; sums accumulate in fp32 at least."""
    batch, _, dim = tokens.shape
    summands = tokens.to(torch.promote_types(tokens.dtype, torch.float32))
    if key_padding_mask is not None:
        # Padding tokens join word 0 with weight 0, whatever word_index says there.
        word_index = word_index.masked_fill(key_padding_mask, 0)
        summands = summands.masked_fill(key_padding_mask.unsqueeze(-1), 0.0)
        token_weight = (~key_padding_mask).to(summands.dtype)
    else:
        token_weight = summands.new_ones(word_index.shape)
    token_to_word = word_index.unsqueeze(-1).expand(-1, -1, dim)
    word_sums = summands.new_zeros(batch, num_words, dim).scatter_add(1, token_to_word, summands)
    word_sizes = summands.new_zeros(batch, num_words).scatter_add(1, word_index, token_weight)
    words = word_sums / word_sizes.clamp(min=1).unsqueeze(-1)
    return words.to(tokens.dtype), word_sizes, word_index


class AttentionProjections(nn.Module):
    """q/k/v/out projections of one multi-head attention (each of Whole-Word Attention's two
    attentions, and the plain self-attention)."""

    def __init__(self, dim: int, num_heads: int) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.q_proj = nn.Linear(dim, dim)
        self.k_proj = nn.Linear(dim, dim)
        self.v_proj = nn.Linear(dim, dim)
        self.out_proj = nn.Linear(dim, dim)

    # Copied from fairseq_struct.modules.whole_word_attention.AttentionProjections.split_heads
    def split_heads(self, x: Tensor) -> Tensor:
        batch, length, _ = x.shape
        return x.view(batch, length, self.num_heads, self.head_dim).transpose(1, 2)

    # Copied from fairseq_struct.modules.whole_word_attention.AttentionProjections.queries_keys_values
    def queries_keys_values(self, x: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        q = self.split_heads(self.q_proj(x) * self.head_dim**-0.5)
        return q, self.split_heads(self.k_proj(x)), self.split_heads(self.v_proj(x))

    # Copied from fairseq_struct.modules.whole_word_attention.AttentionProjections.output
    def output(self, heads: Tensor) -> Tensor:
        batch, _, length, _ = heads.shape
        return self.out_proj(heads.transpose(1, 2).reshape(batch, length, -1))


class StructSelfAttention(AttentionProjections):
    """Multi-head self-attention, with Shaw relative positions when `relative_positions` > 0."""

    def __init__(self, config: StructEncoderConfig) -> None:
        super().__init__(config.hidden_size, config.num_attention_heads)
        self.relative_positions = (
            RelativePositionEmbeddings(config.relative_positions, self.head_dim)
            if config.relative_positions > 0
            else None
        )
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)

    def forward(self, x: Tensor, padding_mask: Tensor, word_index: Tensor) -> Tensor:
        """x (B, T, C), padding_mask (B, T) True at padding."""
        q, k, v = self.queries_keys_values(x)
        energies = torch.matmul(q, k.transpose(2, 3))
        bucket_index = None
        if self.relative_positions is not None:
            bucket_index = self.relative_positions.bucket_index(x.size(1), x.device)
            energies = energies + self.relative_positions.key_logits(q, bucket_index)
        energies = energies.masked_fill(padding_mask[:, None, None, :], float("-inf"))
        accumulate = torch.promote_types(energies.dtype, torch.float32)
        probs = self.dropout(F.softmax(energies, dim=-1, dtype=accumulate).type_as(energies))
        heads = torch.matmul(probs, v)
        if bucket_index is not None:
            heads = heads + self.relative_positions.value_term(probs, bucket_index)
        return self.output(heads)


class WholeWordAttention(nn.Module):
    """mha_wwa(x) + mha_wind(x) of Zöllner et al. (section 5), without the residual.

    mha_wwa: token vectors averaged per word (eq. 8), attention over words with word-level
    relative positions, each word's output copied back to its tokens. mha_wind: every token
    attends to the tokens at most w away, relative positions per offset, computed in blocks of
    b queries (no T x T matrix), exactly as fairseq_struct's `modules.whole_word_attention`.
    """

    def __init__(self, config: StructEncoderConfig) -> None:
        super().__init__()
        dim, heads = config.hidden_size, config.num_attention_heads
        self.window = config.wwa_window
        self.window_block_size = config.wwa_block_size
        self.word_attention = AttentionProjections(dim, heads)
        self.word_relative_positions = RelativePositionEmbeddings(
            config.wwa_max_relative_position, dim // heads
        )
        self.window_attention = AttentionProjections(dim, heads)
        # Clipping at w: one row per window offset -w..w.
        self.window_relative_positions = RelativePositionEmbeddings(self.window, dim // heads)
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)

    def forward(self, x: Tensor, padding_mask: Tensor, word_index: Tensor) -> Tensor:
        return self.whole_word_attention(x, word_index, padding_mask) + self.windowed_attention(
            x, padding_mask
        )

    def whole_word_attention(self, tokens: Tensor, word_index: Tensor, padding: Tensor) -> Tensor:
        dim = tokens.size(-1)
        num_words = tokens.size(1)  # at most T words; empty slots are masked and never read back
        words, word_sizes, word_index = average_words(tokens, word_index, padding, num_words)

        q, k, v = self.word_attention.queries_keys_values(words)
        relative = self.word_relative_positions
        bucket_index = relative.bucket_index(num_words, tokens.device)
        energies = torch.matmul(q, k.transpose(2, 3)) + relative.key_logits(q, bucket_index)
        probs = self._masked_softmax(energies, (word_sizes == 0)[:, None, None, :])
        heads = torch.matmul(probs, v) + relative.value_term(probs, bucket_index)
        word_outputs = self.word_attention.output(heads)
        # z_i = ŷ_F(i): every token gets its word's output.
        return word_outputs.gather(1, word_index.unsqueeze(-1).expand(-1, -1, dim))

    def windowed_attention(self, tokens: Tensor, padding: Tensor) -> Tensor:
        """Query block c (b queries) against keys cb-w .. cb+b-1+w in one batched matmul; the
        (T, 2w+1) band is read out of the (b, b+2w) block energies with a strided view, and the
        weights go back to blocks by the inverse shift (Longformer's sliding chunks)."""
        batch, length, _ = tokens.shape
        w = self.window
        span = 2 * w + 1
        block = self.window_block_size
        num_blocks = -(-length // block)
        padded_length = num_blocks * block
        extended = block + 2 * w
        q, k, v = self.window_attention.queries_keys_values(tokens)
        heads_shape = q.shape[:2]
        relative = self.window_relative_positions
        if padded_length > length:
            q = F.pad(q, (0, 0, 0, padded_length - length))
        else:
            q = q.contiguous()
        blocked = (*heads_shape, num_blocks, block)
        key_padding = (0, 0, w, w + padded_length - length)
        k_blocks = F.pad(k, key_padding).unfold(2, extended, block)
        v_blocks = F.pad(v, key_padding).unfold(2, extended, block).transpose(-1, -2)
        block_energies = torch.matmul(q.view(*blocked, -1), k_blocks)
        band = block_energies.flatten(-2).unfold(-1, span, extended + 1)
        relative_energies = torch.matmul(q, relative.relative_keys.transpose(0, 1))
        energies = (band + relative_energies.view(*blocked, span)).view(q.shape[:-1] + (span,))
        # Keys outside the sequence count as padding.
        outside = F.pad(padding, (w, w + padded_length - length), value=True).unfold(1, span, 1)
        probs = self._masked_softmax(energies, outside[:, None, :, :])
        block_probs = F.pad(probs, (0, block)).view(*heads_shape, num_blocks, -1)
        block_probs = block_probs[..., : block * extended].view(*blocked, extended)
        heads = torch.matmul(block_probs, v_blocks).view(q.shape)
        heads = heads + torch.matmul(probs, relative.relative_values)
        return self.window_attention.output(heads[:, :, :length])

    # Copied from fairseq_struct.modules.whole_word_attention.WholeWordAttention._masked_softmax with dropout_module->dropout
    def _masked_softmax(self, energies: Tensor, mask: Tensor) -> Tensor:
        # The dtype's lowest finite value rather than -inf: a padding token whose whole window is
        # padding gets finite (ignored) weights instead of NaNs that would reach the gradients.
        energies = energies.masked_fill(mask, torch.finfo(energies.dtype).min)
        # In fp32 (fp64 stays fp64) whatever the input dtype: fp16/bf16 sums lose too much.
        accumulate = torch.promote_types(energies.dtype, torch.float32)
        probs = torch.softmax(energies, dim=-1, dtype=accumulate).to(energies.dtype)
        return self.dropout(probs)


# ----------------------------------------------------------------------------- encoder


class StructEncoderLayer(nn.Module):
    """fairseq's TransformerEncoderLayer: attention and FFN blocks, each dropout -> residual ->
    layer norm (post-norm), or layer norm first (`normalize_before`)."""

    def __init__(self, config: StructEncoderConfig) -> None:
        super().__init__()
        dim = config.hidden_size
        self.self_attn = (
            WholeWordAttention(config)
            if config.whole_word_attention
            else StructSelfAttention(config)
        )
        self.self_attn_layer_norm = nn.LayerNorm(dim, eps=config.layer_norm_eps)
        self.fc1 = nn.Linear(dim, config.intermediate_size)
        self.fc2 = nn.Linear(config.intermediate_size, dim)
        self.final_layer_norm = nn.LayerNorm(dim, eps=config.layer_norm_eps)
        self.activation_fn = ACTIVATIONS[config.hidden_act]
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.activation_dropout = nn.Dropout(config.activation_dropout)
        self.normalize_before = config.normalize_before

    def forward(self, x: Tensor, padding_mask: Tensor, word_index: Tensor) -> Tensor:
        residual = x
        if self.normalize_before:
            x = self.self_attn_layer_norm(x)
        x = residual + self.dropout(self.self_attn(x, padding_mask, word_index))
        if not self.normalize_before:
            x = self.self_attn_layer_norm(x)
        residual = x
        if self.normalize_before:
            x = self.final_layer_norm(x)
        x = self.fc2(self.activation_dropout(self.activation_fn(self.fc1(x))))
        x = residual + self.dropout(x)
        if not self.normalize_before:
            x = self.final_layer_norm(x)
        return x


class StructEncoderPreTrainedModel(PreTrainedModel):
    config_class = StructEncoderConfig
    base_model_prefix = "encoder"
    supports_gradient_checkpointing = False

    def _init_weights(self, module: nn.Module) -> None:
        """BERT's initialisation, for the parts a checkpoint does not hold (e.g. a new head)."""
        std = self.config.initializer_range
        if isinstance(module, (nn.Linear, nn.Conv1d)):
            nn.init.normal_(module.weight, mean=0.0, std=std)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=std)
            if module.padding_idx is not None:
                with torch.no_grad():
                    module.weight[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)
        elif isinstance(module, RelativePositionEmbeddings):
            nn.init.xavier_uniform_(module.relative_keys)
            nn.init.xavier_uniform_(module.relative_values)
        elif isinstance(module, LinearChainCRF):
            nn.init.zeros_(module.transition_weights)
            nn.init.ones_(module.forbidden_factor)
            nn.init.zeros_(module.forbidden_penalty)
        elif isinstance(module, LanguageModelHead):
            nn.init.zeros_(module.bias)
            if module.weight is not None:
                nn.init.normal_(module.weight, mean=0.0, std=std)
        if isinstance(module, Highway):
            nn.init.constant_(module.gate.bias, -2.0)  # carry the input at the start


class StructEncoderModel(StructEncoderPreTrainedModel):
    """The encoder alone: `last_hidden_state` (B, T, C) and, on request, the embedding output
    and every layer's output as `hidden_states` (fairseq's `inner_states`).

    Words begin where `word_start_lookup[input_ids]` says (a buffer saved with the weights: True
    for pieces starting with ▁, every special symbol, every symbol of word-level data), or where
    `word_starts` (B, T) says: fairseq's masked-LM task passes the word starts of the text before
    masking, so pass the unmasked sequence's `word_start_lookup[ids]` to reproduce it. Padding
    is `pad_token_id` and wherever `attention_mask` is 0; segments begin after the first </s>."""

    def __init__(self, config: StructEncoderConfig) -> None:
        super().__init__(config)
        dim = config.hidden_size
        if config.token_embedding == "characters":
            self.embed_tokens: nn.Module = CharacterWordEmbedding(config)
        else:
            self.embed_tokens = nn.Embedding(config.vocab_size, dim, config.pad_token_id)
        self.embed_scale = config.embed_scale
        self.embed_positions = (
            StructPositionEmbedding(config)
            if config.position_embedding != "none" or config.num_segments > 0
            else None
        )
        self.layernorm_embedding = (
            nn.LayerNorm(dim, eps=config.layer_norm_eps) if config.layernorm_embedding else None
        )
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.layers = nn.ModuleList(
            StructEncoderLayer(config) for _ in range(config.num_hidden_layers)
        )
        self.layer_norm = (
            nn.LayerNorm(dim, eps=config.layer_norm_eps) if config.normalize_before else None
        )
        # Saved with the weights (fairseq derives them from its dictionary): which symbols
        # begin a word, and which are special (never a word of the text).
        self.register_buffer("word_start_lookup", torch.ones(config.vocab_size, dtype=torch.bool))
        self.register_buffer(
            "special_symbol_lookup", torch.zeros(config.vocab_size, dtype=torch.bool)
        )
        self.post_init()

    def padding_mask(self, input_ids: Tensor, attention_mask: Optional[Tensor]) -> Tensor:
        padding = input_ids.eq(self.config.pad_token_id)
        if attention_mask is not None:
            padding = padding | attention_mask.eq(0)
        return padding

    def given_segments(
        self, token_type_ids: Tensor, segment_index: Tensor, padding: Tensor
    ) -> Tensor:
        """The segment of each token from the caller's `token_type_ids`, as BERT (and the
        published BERT2D) reads them: a transformers user passes what BERT's tokenizer returns
        and expects it used, not ignored, and an imported BERT2D then gives its source's
        outputs for any token types. Types that follow fairseq's rule (0 up to and including
        the first </s>, 1 after; padding: anything) give fairseq's outputs exactly. A type the
        segment table has no row for is an error where it departs from the rule (where it
        follows it, the table's last row, as fairseq clamps). 2D word positions restart after
        the first </s> whatever the types say, as the published BERT2D's tokenizer restarts
        them. Checking the types reads them on the host (a synchronisation on a GPU)."""
        if token_type_ids.shape != segment_index.shape:
            raise ValueError(
                f"token_type_ids have the shape {tuple(token_type_ids.shape)}, input_ids "
                f"{tuple(segment_index.shape)}"
            )
        given = torch.where(padding, segment_index, token_type_ids.long())
        table = self.embed_positions.segments if self.embed_positions is not None else None
        rows = table.num_embeddings if table is not None else 0
        departs = given.ne(segment_index)
        unusable = departs & (given.ge(rows) | given.lt(0))
        if bool(unusable.any()):
            row, position = (int(i) for i in unusable.nonzero()[0])
            raise ValueError(
                f"token_type_ids[{row}, {position}] is {int(given[row, position])} where this "
                f"model's segment is {int(segment_index[row, position])} (0 up to and including "
                f"the first </s>, 1 after), and its segment embedding has {rows} rows, so it "
                "cannot use the type given: pass the types of that rule, or none"
            )
        return given if rows == 0 else given.clamp(max=rows - 1)

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Optional[Tensor] = None,
        word_starts: Optional[Tensor] = None,
        token_type_ids: Optional[Tensor] = None,
        output_hidden_states: Optional[bool] = None,
        return_dict: Optional[bool] = None,
        **kwargs: Any,
    ) -> BaseModelOutput:
        if word_starts is None:
            word_starts = self.word_start_lookup[input_ids]
        word_index, position_in_word, word_length, segment_index = word_structure(
            word_starts.bool(), input_ids, self.config.eos_token_id
        )
        padding = self.padding_mask(input_ids, attention_mask)
        segments = segment_index
        if token_type_ids is not None:
            segments = self.given_segments(token_type_ids, segment_index, padding)
        x = self.embed_scale * self.embed_tokens(input_ids)
        if self.embed_positions is not None:
            x = x + self.embed_positions(
                input_ids,
                word_index,
                position_in_word,
                word_length,
                segment_index,
                segments,
                padding,
            )
        if self.layernorm_embedding is not None:
            x = self.layernorm_embedding(x)
        x = self.dropout(x)
        x = x * (1 - padding.unsqueeze(-1).type_as(x))  # fairseq zeroes the padding rows
        states: List[Tensor] = [x]
        for layer in self.layers:
            x = layer(x, padding, word_index)
            states.append(x)
        if self.layer_norm is not None:
            x = self.layer_norm(x)
        if output_hidden_states is None:
            output_hidden_states = self.config.output_hidden_states
        hidden_states = tuple(states) if output_hidden_states else None
        if return_dict is False:  # transformers' tuple convention
            return (x, hidden_states) if output_hidden_states else (x,)  # type: ignore
        return BaseModelOutput(last_hidden_state=x, hidden_states=hidden_states)


# ----------------------------------------------------------------------------- heads


class LanguageModelHead(nn.Module):
    """fairseq's RobertaLMHead: dense -> activation -> layer norm -> output matrix + bias. The
    matrix is the token embedding table when tied (passed in), else `weight`."""

    def __init__(self, config: StructEncoderConfig) -> None:
        super().__init__()
        dim = config.hidden_size
        self.dense = nn.Linear(dim, dim)
        self.activation_fn = ACTIVATIONS[config.hidden_act]
        self.layer_norm = nn.LayerNorm(dim, eps=config.layer_norm_eps)
        self.weight = (
            None if config.tie_lm_head else nn.Parameter(torch.zeros(config.output_vocab_size, dim))
        )
        self.bias = nn.Parameter(torch.zeros(config.output_vocab_size))

    def forward(self, features: Tensor, tied_weight: Optional[Tensor]) -> Tensor:
        x = self.layer_norm(self.activation_fn(self.dense(features)))
        weight = tied_weight if self.weight is None else self.weight
        return F.linear(x, weight) + self.bias


class ClassificationHead(nn.Module):
    """RoBERTa's classification head shape: dropout -> dense -> activation -> dropout -> out_proj
    (on <s> for sentences, on every token for token classification); with `hidden_layer` False,
    BertForTokenClassification's: dropout -> out_proj."""

    def __init__(
        self, config: StructEncoderConfig, outputs: int, hidden_layer: bool = True
    ) -> None:
        super().__init__()
        self.dropout = nn.Dropout(config.classifier_dropout)
        self.dense = nn.Linear(config.hidden_size, config.hidden_size) if hidden_layer else None
        self.activation_fn = ACTIVATIONS[config.classifier_activation]
        self.out_proj = nn.Linear(config.hidden_size, outputs)

    # Copied from fairseq_struct.modules.token_classification_heads.TokenClassificationHead.forward
    def forward(self, features: Tensor, **kwargs) -> Tensor:
        x = self.dropout(features)
        if self.dense is not None:
            x = self.dropout(self.activation_fn(self.dense(x)))
        return self.out_proj(x)


# Copied from fairseq_struct.modules.linear_chain_crf.lcrf_ner_transitions
def lcrf_ner_transitions(
    transition_weights: Tensor,
    forbidden: Tensor,
    forbidden_factor: Tensor,
    forbidden_penalty: Tensor,
) -> Tensor:
    """LCRF_NER's transitions T = (A + ω_f·F) ⊙ W − ω_a·F (eq. 7), with A = 1 − F."""
    allowed = 1.0 - forbidden
    return (
        allowed + forbidden_factor * forbidden
    ) * transition_weights - forbidden_penalty * forbidden


class LinearChainCRF(nn.Module):
    """LCRF (T = W) or LCRF_NER (T = (A + ω_f·F) ⊙ W − ω_a·F, Zöllner et al. eq. 7) over the labels.

    Path score (eq. 6): Σ_j y[j, c_j] + Σ_{j<n} T[c_j, c_{j+1}], no start or end transitions.
    `forbidden` is F: 1 where an I-X follows a tag that is neither B-X nor I-X.
    """

    def __init__(self, num_tags: int, with_forbidden: bool) -> None:
        super().__init__()
        self.with_forbidden = with_forbidden
        self.transition_weights = nn.Parameter(torch.zeros(num_tags, num_tags))
        self.forbidden_factor = nn.Parameter(torch.ones(()))  # ω_f
        self.forbidden_penalty = nn.Parameter(torch.zeros(()))  # ω_a
        self.register_buffer("forbidden", torch.zeros(num_tags, num_tags))

    def transitions(self) -> Tensor:
        if not self.with_forbidden:
            return self.transition_weights
        return lcrf_ner_transitions(
            self.transition_weights, self.forbidden, self.forbidden_factor, self.forbidden_penalty
        )

    # Copied from fairseq_struct.modules.linear_chain_crf.LinearChainCRF._compute_inputs
    def _compute_inputs(self, emissions: Tensor) -> Tuple[Tensor, Tensor]:
        # fp16/bf16 emissions (and a .half() model) are scored in float32: the forward
        # algorithm sums n terms and exponentiates them, which half precision cannot hold.
        dtype = torch.promote_types(emissions.dtype, torch.float32)
        return emissions.to(dtype), self.transitions().to(dtype)

    # Copied from fairseq_struct.modules.linear_chain_crf.LinearChainCRF.log_likelihood
    def log_likelihood(self, emissions: Tensor, tags: Tensor, mask: Tensor) -> Tensor:
        """log p(tags | emissions) per row: emissions (B, N, L), left-aligned mask (B, N)."""
        emissions, transitions = self._compute_inputs(emissions)
        batch_size, length, _ = emissions.shape
        if length == 0:
            return emissions.new_zeros(batch_size)
        tags = tags.masked_fill(~mask, 0)

        # Score of the gold path, eq. (6): a transition j -> j+1 counts when j+1 is a word.
        gold_emissions = emissions.gather(-1, tags.unsqueeze(-1)).squeeze(-1)
        gold_score = torch.where(mask, gold_emissions, 0.0).sum(dim=1)
        gold_transitions = transitions[tags[:, :-1], tags[:, 1:]]
        gold_score = gold_score + torch.where(mask[:, 1:], gold_transitions, 0.0).sum(dim=1)

        # Forward algorithm: alpha[b, c] = log-sum of exp s over the prefixes ending in tag c.
        alpha = emissions[:, 0]
        for t in range(1, length):
            step = torch.logsumexp(alpha.unsqueeze(2) + transitions, dim=1) + emissions[:, t]
            alpha = torch.where(mask[:, t].unsqueeze(1), step, alpha)
        log_partition = torch.logsumexp(alpha, dim=1)
        return torch.where(mask.any(dim=1), gold_score - log_partition, 0.0)

    # Copied from fairseq_struct.modules.linear_chain_crf.LinearChainCRF.viterbi_decode
    @torch.no_grad()
    def viterbi_decode(self, emissions: Tensor, mask: Tensor) -> Tensor:
        """The best path of eq. (6) per row, (B, N); -1 outside the left-aligned mask."""
        emissions, transitions = self._compute_inputs(emissions)
        batch_size, length, _ = emissions.shape
        paths = torch.full((batch_size, length), -1, dtype=torch.long, device=emissions.device)
        if length == 0:
            return paths
        score = emissions[:, 0]
        backpointers = []
        for t in range(1, length):
            best, best_previous = (score.unsqueeze(2) + transitions).max(dim=1)
            score = torch.where(mask[:, t].unsqueeze(1), best + emissions[:, t], score)
            backpointers.append(best_previous)

        # A row's best last tag is placed at its own last word; walking back, a row only
        # follows its back-pointers once inside its sentence.
        lengths = mask.sum(dim=1)
        current = score.argmax(dim=1)
        for t in range(length - 1, -1, -1):
            inside = t < lengths
            paths[:, t] = torch.where(inside, current, -1)
            if t > 0:
                previous = backpointers[t - 1].gather(1, current.unsqueeze(1)).squeeze(1)
                current = torch.where(inside, previous, current)
        return paths


# Copied from fairseq_struct.modules.token_classification_heads.gather_words
def gather_words(outputs: Tensor, word_mask: Tensor) -> Tuple[Tensor, Tensor]:
    """(B, T, K) outputs of the True positions of word_mask, left-aligned, and the (B, T) mask of
    the real words."""
    counts = word_mask.sum(dim=1)
    # A stable sort puts each row's True positions first, in order.
    order = torch.sort((~word_mask).to(torch.int8), dim=1, stable=True).indices
    words = outputs.gather(1, order.unsqueeze(-1).expand(-1, -1, outputs.size(-1)))
    mask = torch.arange(word_mask.size(1), device=outputs.device).unsqueeze(0) < counts.unsqueeze(1)
    return words, mask


# Copied from fairseq_struct.tagging.iob.split_tag with split_tag->_split_tag
def _split_tag(tag: str) -> Tuple[str, str]:
    """("B", "PER") for "B-PER", ("I", "PER") for "I-PER", ("O", "") for "O".

    Only the first hyphen separates: "B-LOC-deriv" is ("B", "LOC-deriv").
    """
    if tag == OUTSIDE:
        return OUTSIDE, ""
    if len(tag) > 2 and tag[:2] in ("B-", "I-"):
        return tag[0], tag[2:]
    raise ValueError(f"tag {tag!r} is not IOB: expected 'O', 'B-<type>' or 'I-<type>'")


# Copied from fairseq_struct.tagging.iob._forbidden with split_tag->_split_tag
def _forbidden(previous: Optional[str], tag: str) -> bool:
    """Whether `tag` is an I-X that may not follow `previous` (None: the sentence start)."""
    prefix, kind = _split_tag(tag)
    if prefix != "I":
        return False
    if previous is None:
        return True
    previous_prefix, previous_kind = _split_tag(previous)
    return previous_prefix == OUTSIDE or previous_kind != kind


# Copied from fairseq_struct.tagging.iob.entity_fix with split_tag->_split_tag
def entity_fix(tags: Sequence[str]) -> List[str]:
    """The Entity-Fix rule (Zöllner et al., 4.3): a forbidden I-X takes the tag before it (as
    I-, so after O it becomes O); an I-X opening the sentence becomes B-X."""
    fixed: List[str] = []
    for tag in tags:
        if _forbidden(fixed[-1] if fixed else None, tag):
            if not fixed:
                tag = f"B-{_split_tag(tag)[1]}"
            else:
                previous_prefix, previous_kind = _split_tag(fixed[-1])
                tag = OUTSIDE if previous_prefix == OUTSIDE else f"I-{previous_kind}"
        fixed.append(tag)
    return fixed


class StructEncoderWithHead(StructEncoderPreTrainedModel):
    """The encoder under a task head: what the three task models share."""

    def __init__(self, config: StructEncoderConfig) -> None:
        super().__init__(config)
        self.encoder = StructEncoderModel(config)

    def encode(
        self,
        input_ids: Tensor,
        attention_mask: Optional[Tensor],
        word_starts: Optional[Tensor],
        output_hidden_states: Optional[bool],
        **kwargs: Any,
    ) -> BaseModelOutput:
        """The encoder's output for the head (always a BaseModelOutput, whatever return_dict)."""
        return self.encoder(
            input_ids,
            attention_mask=attention_mask,
            word_starts=word_starts,
            output_hidden_states=output_hidden_states,
            **kwargs,
        )


class StructEncoderForMaskedLM(StructEncoderWithHead):
    """Encoder + fairseq's masked-LM head: logits over the first `output_vocab_size` symbols."""

    def __init__(self, config: StructEncoderConfig) -> None:
        super().__init__(config)
        self.lm_head = LanguageModelHead(config)
        self.post_init()

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Optional[Tensor] = None,
        word_starts: Optional[Tensor] = None,
        labels: Optional[Tensor] = None,
        output_hidden_states: Optional[bool] = None,
        return_dict: Optional[bool] = None,
        **kwargs: Any,
    ) -> MaskedLMOutput:
        outputs = self.encode(
            input_ids, attention_mask, word_starts, output_hidden_states, **kwargs
        )
        tied = self.encoder.embed_tokens.weight if self.config.tie_lm_head else None
        logits = self.lm_head(outputs.last_hidden_state, tied)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)).float(), labels.view(-1))
        return MaskedLMOutput(loss=loss, logits=logits, hidden_states=outputs.hidden_states)


class StructEncoderForSequenceClassification(StructEncoderWithHead):
    """Encoder + a classification head on <s> (fairseq's `sentence_prediction`)."""

    def __init__(self, config: StructEncoderConfig) -> None:
        super().__init__(config)
        self.num_labels = config.num_labels
        self.classifier = ClassificationHead(config, config.num_labels)
        self.post_init()

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Optional[Tensor] = None,
        word_starts: Optional[Tensor] = None,
        labels: Optional[Tensor] = None,
        output_hidden_states: Optional[bool] = None,
        return_dict: Optional[bool] = None,
        **kwargs: Any,
    ) -> SequenceClassifierOutput:
        outputs = self.encode(
            input_ids, attention_mask, word_starts, output_hidden_states, **kwargs
        )
        logits = self.classifier(outputs.last_hidden_state[:, 0, :])  # <s>, as BERT's [CLS]
        loss = None
        if labels is not None:
            if self.config.problem_type == "regression" or self.num_labels == 1:
                loss = F.mse_loss(logits.squeeze(-1).float(), labels.float())
            elif self.config.problem_type == "multi_label_classification":
                loss = F.binary_cross_entropy_with_logits(logits.float(), labels.float())
            else:
                loss = F.cross_entropy(logits.float(), labels.view(-1))
        return SequenceClassifierOutput(
            loss=loss, logits=logits, hidden_states=outputs.hidden_states
        )


class StructEncoderForTokenClassification(StructEncoderWithHead):
    """Encoder + fairseq_struct's token-classification head (`--head softmax|lcrf|lcrf_ner`).

    `logits` (B, T, labels) are the per-token scores: softmax logits, or the CRF's emission
    scores (its transitions: `crf.transitions()`). A word's label is read on its first unit;
    `decode` gives the labels of the words (argmax, or Viterbi for the CRF heads, then the
    Entity-Fix rule if fine-tuning used it). With `labels` (B, T) (-100 except on first units)
    the loss is the cross-entropy, or the CRF's negative log-likelihood per sentence.
    """

    def __init__(self, config: StructEncoderConfig) -> None:
        super().__init__(config)
        self.num_labels = config.num_labels
        self.classifier = ClassificationHead(
            config, config.num_labels, hidden_layer=config.token_head_layers == 2
        )
        self.crf = (
            LinearChainCRF(config.num_labels, config.token_head == "lcrf_ner")
            if config.token_head in ("lcrf", "lcrf_ner")
            else None
        )
        self.post_init()

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Optional[Tensor] = None,
        word_starts: Optional[Tensor] = None,
        labels: Optional[Tensor] = None,
        output_hidden_states: Optional[bool] = None,
        return_dict: Optional[bool] = None,
        **kwargs: Any,
    ) -> TokenClassifierOutput:
        outputs = self.encode(
            input_ids, attention_mask, word_starts, output_hidden_states, **kwargs
        )
        logits = self.classifier(outputs.last_hidden_state)
        loss = None
        if labels is not None:
            if self.crf is None:
                loss = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten())
            else:
                words, mask = gather_words(logits, labels.ne(-100))
                tags, _ = gather_words(labels.unsqueeze(-1), labels.ne(-100))
                tags = tags.squeeze(-1).clamp(min=0)
                loss = -self.crf.log_likelihood(words, tags, mask).mean()
        return TokenClassifierOutput(loss=loss, logits=logits, hidden_states=outputs.hidden_states)

    def default_word_mask(self, input_ids: Tensor, attention_mask: Optional[Tensor]) -> Tensor:
        """The first unit of every word by the dictionary (▁ pieces, or every word-level token),
        without <s>, </s> and padding."""
        starts = self.encoder.word_start_lookup[input_ids]
        special = (
            input_ids.eq(self.config.bos_token_id)
            | input_ids.eq(self.config.eos_token_id)
            | self.encoder.padding_mask(input_ids, attention_mask)
        )
        return starts & ~special

    @torch.no_grad()
    def decode(
        self,
        input_ids: Tensor,
        attention_mask: Optional[Tensor] = None,
        word_mask: Optional[Tensor] = None,
        entity_fix_rule: Optional[bool] = None,
    ) -> List[List[str]]:
        """The label of every word of every row: argmax (softmax head) or Viterbi (CRF heads).

        word_mask (B, T) bool: the unit of each word that carries its label (the tokenizer's
        `encode_words(...)["word_mask"]`, as fine-tuning placed the labels); by default the
        dictionary's word starts (`default_word_mask`). entity_fix_rule: apply the Entity-Fix
        rule (default: as fine-tuning's --entity-fix).
        """
        logits = self(input_ids, attention_mask=attention_mask).logits.float()
        if word_mask is None:
            word_mask = self.default_word_mask(input_ids, attention_mask)
        words, mask = gather_words(logits, word_mask.bool())
        lengths = mask.sum(dim=1).tolist()
        if self.crf is None:
            best = words.argmax(dim=-1).tolist()
        else:
            best = self.crf.viterbi_decode(words, mask).tolist()
        names = self.config.id2label
        tags = [[names[index] for index in row[:n]] for row, n in zip(best, lengths)]
        use_fix = self.config.entity_fix if entity_fix_rule is None else entity_fix_rule
        return [entity_fix(row) for row in tags] if use_fix else tags
