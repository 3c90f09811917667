"""The paper's baseline: a Transformer with relative positions and no roles (design.md §2.3).

The TP-Transformer's code path with role binding off; at base size the heads are 80 wide instead
of 64, so that both models have the same number of parameters.
"""

from argparse import Namespace

from fairseq.models import register_model, register_model_architecture

from fairseq_struct.models.tp_transformer import (
    TPTransformerModel,
    set_attention_defaults,
    set_dimensions,
    tiny_encoder_decoder_dimensions,
)


@register_model("transformer_relpos")
class RelativePositionTransformerModel(TPTransformerModel):
    uses_roles = False


@register_model_architecture("transformer_relpos", "transformer_relpos")
def transformer_relpos_architecture(args: Namespace) -> None:
    set_attention_defaults(args, head_dim=80)


@register_model_architecture("transformer_relpos", "transformer_relpos_base")
def transformer_relpos_base(args: Namespace) -> None:
    """6+6 layers, 8 heads of width 80 (d_k = d_v = 80), d_model 512, ffn 2048, k=16."""
    set_dimensions(args, layers=6, embed_dim=512, ffn_dim=2048, heads=8)
    transformer_relpos_architecture(args)


@register_model_architecture("transformer_relpos", "transformer_relpos_tiny")
def transformer_relpos_tiny(args: Namespace) -> None:
    """Parameter-matched to tp_transformer_tiny: heads 40 wide instead of 32 (5/4, as at base)."""
    tiny_encoder_decoder_dimensions(args)
    set_attention_defaults(args, head_dim=40)
