"""BERT2D (Kaya & Tantuğ; design.md §4.2): BERT whose 1D positions become word + subword ones.

`--arch bert2d_base` with `--task masked_lm_struct --criterion masked_lm_struct`;
`--position-embedding 1d` gives the same encoder with BERT's 1D table, and
`--relative-positions` / `--whole-word-attention` are the encoder options of design.md §4.4.
"""

from typing import Any

from fairseq.models import register_model, register_model_architecture
from fairseq.models.roberta.model import base_architecture as roberta_base_architecture
from fairseq.utils import safe_getattr

from fairseq_struct.models.struct_roberta import (
    StructRobertaModel,
    struct_encoder_defaults,
    tiny_encoder_dimensions,
)


@register_model("bert2d")
class Bert2DModel(StructRobertaModel):
    pass


@register_model_architecture("bert2d", "bert2d")
def bert2d_architecture(args: Any) -> None:
    args.position_embedding = safe_getattr(args, "position_embedding", "2d")
    struct_encoder_defaults(args)
    # fairseq's roberta defaults are BERT base: 12 layers, 768, 12 heads, 3072, GELU, 0.1.
    roberta_base_architecture(args)


@register_model_architecture("bert2d", "bert2d_base")
def bert2d_base_architecture(args: Any) -> None:
    args.max_positions = safe_getattr(args, "max_positions", 512)
    bert2d_architecture(args)


@register_model_architecture("bert2d", "bert2d_tiny")
def bert2d_tiny_architecture(args: Any) -> None:
    tiny_encoder_dimensions(args)
    bert2d_architecture(args)
