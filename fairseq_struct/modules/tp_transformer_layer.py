"""Transformer encoder/decoder layers whose attentions are RoleRelativeMultiheadAttention; the rest
(residuals, layer norms, feed-forward) is fairseq's own."""

from fairseq.models.transformer import TransformerConfig
from fairseq.modules.transformer_layer import (
    TransformerDecoderLayerBase,
    TransformerEncoderLayerBase,
)

from fairseq_struct.modules.role_attention import (
    RoleAttentionOptions,
    RoleRelativeMultiheadAttention,
)


class TPTransformerEncoderLayer(TransformerEncoderLayerBase):
    def __init__(self, cfg: TransformerConfig, options: RoleAttentionOptions) -> None:
        # build_self_attention runs inside the parent constructor and needs the options.
        self.attention_options = options
        super().__init__(cfg)

    def build_self_attention(self, embed_dim: int, cfg: TransformerConfig):
        return RoleRelativeMultiheadAttention(
            embed_dim,
            cfg.encoder.attention_heads,
            self.attention_options,
            dropout=cfg.attention_dropout,
            self_attention=True,
        )


class TPTransformerDecoderLayer(TransformerDecoderLayerBase):
    def __init__(
        self, cfg: TransformerConfig, options: RoleAttentionOptions, no_encoder_attn: bool = False
    ) -> None:
        self.attention_options = options
        super().__init__(cfg, no_encoder_attn=no_encoder_attn)

    def build_self_attention(
        self, embed_dim: int, cfg: TransformerConfig, add_bias_kv=False, add_zero_attn=False
    ):
        if add_bias_kv or add_zero_attn:
            raise ValueError("the TP-Transformer does not support add_bias_kv / add_zero_attn")
        return RoleRelativeMultiheadAttention(
            embed_dim,
            cfg.decoder.attention_heads,
            self.attention_options,
            dropout=cfg.attention_dropout,
            self_attention=True,
        )

    def build_encoder_attention(self, embed_dim: int, cfg: TransformerConfig):
        # Roles come from the decoder stream (the query); no relative positions across languages.
        return RoleRelativeMultiheadAttention(
            embed_dim,
            cfg.decoder.attention_heads,
            self.attention_options,
            dropout=cfg.attention_dropout,
            encoder_decoder_attention=True,
            kdim=cfg.encoder.embed_dim,
            vdim=cfg.encoder.embed_dim,
        )
