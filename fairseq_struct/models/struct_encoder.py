"""The Transformer encoder of the masked-LM models, with word structure (design.md §4.2, §4.4).

fairseq's `TransformerEncoder`, subclassed: 1D, BERT2D's 2D or no absolute positions, optional
segments, Shaw relative positions or Whole-Word Attention. Word starts come from the task
(computed before masking, so a masked word keeps its shape) or else from the dictionary.
"""

from dataclasses import dataclass
from typing import Any, Optional, Tuple

from fairseq.models.transformer import TransformerEncoder
from fairseq.utils import safe_getattr
from torch import Tensor, nn

from fairseq_struct.modules.role_attention import (
    RoleAttentionOptions,
    RoleRelativeMultiheadAttention,
)
from fairseq_struct.modules.structural_position_embedding import StructuralPositionEmbedding
from fairseq_struct.modules.whole_word_attention import WholeWordAttention
from fairseq_struct.pieces.word_boundaries import WordStructure, word_structure


class StructureContext:
    """The WordStructure of the batch that the encoder is encoding right now, for the modules
    that fairseq's layers call with a fixed signature (`self_attn`, `embed_positions`)."""

    def __init__(self) -> None:
        self.current: Optional[WordStructure] = None

    def get(self) -> WordStructure:
        if self.current is None:
            raise RuntimeError(
                "word structure is only available inside StructTransformerEncoder.forward "
                "(activation checkpointing, which re-runs layers later, is not supported)"
            )
        return self.current


@dataclass(frozen=True)
class EncoderStructureOptions:
    position_embedding: str
    max_intermediate_subwords: int
    subword_id_strategy: str
    num_segments: int
    relative_positions: int
    whole_word_attention: bool
    wwa_window: int
    restart_word_positions: bool

    @classmethod
    def from_args(cls, args: Any) -> "EncoderStructureOptions":
        options = cls(
            position_embedding=args.position_embedding,
            max_intermediate_subwords=args.max_intermediate_subwords,
            subword_id_strategy=args.subword_id_strategy,
            num_segments=args.num_segments,
            relative_positions=args.relative_positions,
            whole_word_attention=args.whole_word_attention,
            wwa_window=args.wwa_window,
            # Newer than some checkpoints: its default is what those were built as.
            restart_word_positions=safe_getattr(args, "restart_word_positions", False),
        )
        if safe_getattr(args, "checkpoint_activations", False):
            raise ValueError(
                "the masked-LM struct encoders do not support --checkpoint-activations"
            )
        if options.restart_word_positions and options.position_embedding != "2d":
            raise ValueError("--restart-word-positions needs --position-embedding 2d")
        if safe_getattr(args, "max_word_positions", None) and options.position_embedding != "2d":
            raise ValueError("--max-word-positions needs --position-embedding 2d")
        if options.position_embedding == "none" and not (
            options.relative_positions or options.whole_word_attention
        ):
            raise ValueError(
                "--position-embedding none leaves the encoder without any position information: "
                "add --relative-positions K or --whole-word-attention"
            )
        return options


def position_rows(args: Any) -> int:
    """Rows of the absolute position table: one per token (1D), or per word (2D:
    `--max-word-positions`, by default `--max-positions`, the tokens of a sequence)."""
    if args.position_embedding == "2d" and safe_getattr(args, "max_word_positions", None):
        return int(args.max_word_positions)
    return args.max_positions


class _PositionsFromContext(nn.Module):
    """fairseq's `embed_positions(src_tokens)` slot, answered from the batch's word structure."""

    def __init__(
        self, embedding: StructuralPositionEmbedding, context: StructureContext, padding_idx: int
    ) -> None:
        super().__init__()
        self.embedding = embedding
        self.context = context
        self.max_positions = embedding.max_positions
        self.padding_idx = padding_idx

    def forward(self, src_tokens: Tensor) -> Tensor:
        return self.embedding(self.context.get(), src_tokens.eq(self.padding_idx))


class _WholeWordSelfAttention(nn.Module):
    """fairseq's `self_attn(query=x, key=x, ...)` slot, answered by Whole-Word Attention."""

    def __init__(self, attention: WholeWordAttention, context: StructureContext) -> None:
        super().__init__()
        self.attention = attention
        self.context = context

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Optional[Tensor] = None,
        need_weights: bool = False,
        attn_mask: Optional[Tensor] = None,
    ) -> Tuple[Tensor, None]:
        if attn_mask is not None:
            raise ValueError("Whole-Word Attention takes no attn_mask")
        structure = self.context.get()
        return (
            self.attention(query, structure.word_index, key_padding_mask, structure.max_words),
            None,
        )


class StructTransformerEncoder(TransformerEncoder):
    def __init__(self, args: Any, dictionary: Any, embed_tokens: nn.Module, word_starts: Tensor):
        # Read by build_encoder_layer, which fairseq calls from inside super().__init__.
        self.structure_context = StructureContext()
        self.structure_options = EncoderStructureOptions.from_args(args)
        super().__init__(args, dictionary, embed_tokens)
        self.register_buffer("word_start_lookup", word_starts.bool(), persistent=False)
        options = self.structure_options
        if options.position_embedding == "none" and options.num_segments == 0:
            self.embed_positions = None
        else:
            self.embed_positions = _PositionsFromContext(
                StructuralPositionEmbedding(
                    options.position_embedding,
                    position_rows(args),
                    embed_tokens.embedding_dim,
                    options.max_intermediate_subwords,
                    options.subword_id_strategy,
                    options.num_segments,
                    options.restart_word_positions,
                ),
                self.structure_context,
                self.padding_idx,
            )
        self.max_source_positions = args.max_positions

    def build_encoder_layer(self, args: Any) -> nn.Module:
        layer = super().build_encoder_layer(args)
        options = self.structure_options
        embed_dim, heads = args.encoder_embed_dim, args.encoder_attention_heads
        if options.whole_word_attention:
            layer.self_attn = _WholeWordSelfAttention(
                WholeWordAttention(
                    embed_dim,
                    heads,
                    window=options.wwa_window,
                    max_relative_position=options.relative_positions or 16,
                    dropout=args.attention_dropout,
                ),
                self.structure_context,
            )
        elif options.relative_positions > 0:
            layer.self_attn = RoleRelativeMultiheadAttention(
                embed_dim,
                heads,
                RoleAttentionOptions(
                    head_dim=embed_dim // heads,
                    use_roles=False,
                    max_relative_positions=options.relative_positions,
                ),
                dropout=args.attention_dropout,
                self_attention=True,
            )
        return layer

    def max_positions(self) -> int:
        return self.max_source_positions

    def forward(
        self,
        src_tokens: Tensor,
        src_lengths: Optional[Tensor] = None,
        return_all_hiddens: bool = False,
        token_embeddings: Optional[Tensor] = None,
        word_starts: Optional[Tensor] = None,
        max_words: Optional[int] = None,
    ):
        """fairseq's encoder forward; `word_starts` (batch, time) bool, if given, says which
        tokens begin a word (otherwise the dictionary says it from `src_tokens`); `max_words`,
        if given, is the most words of a sequence (a host int from the data side; otherwise
        Whole-Word Attention gives every token a word slot)."""
        if word_starts is None:
            word_starts = self.word_start_lookup[src_tokens]
        self.structure_context.current = word_structure(
            word_starts, src_tokens, self.dictionary.eos(), max_words
        )
        try:
            return super().forward(src_tokens, src_lengths, return_all_hiddens, token_embeddings)
        finally:
            self.structure_context.current = None
