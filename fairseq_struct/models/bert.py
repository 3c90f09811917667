"""BERT as Google published it (`--arch bert`): the encoder that BERTurk, mBERT and XLM-R become
when imported (`fairseq-struct import-hf`). The structure-aware encoder with BERT's
embedding: token + 1D position (from 0) + token type embeddings and a layer norm of epsilon 1e-12,
where fairseq's `roberta` counts positions from padding_idx + 1, has no token types and uses 1e-5.
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


@register_model("bert")
class StructBertModel(StructRobertaModel):
    pass


@register_model_architecture("bert", "bert")
def bert_architecture(args: Any) -> None:
    args.position_embedding = safe_getattr(args, "position_embedding", "1d")
    args.layer_norm_eps = safe_getattr(args, "layer_norm_eps", 1e-12)
    args.max_positions = safe_getattr(args, "max_positions", 512)
    struct_encoder_defaults(args)
    # fairseq's roberta defaults are BERT base: 12 layers, 768, 12 heads, 3072, GELU, 0.1.
    roberta_base_architecture(args)


@register_model_architecture("bert", "bert_tiny")
def bert_tiny_architecture(args: Any) -> None:
    tiny_encoder_dimensions(args)
    bert_architecture(args)
