"""BERT as Google published it, in fairseq: the encoder that BERTurk, mBERT and XLM-R imports
(`python -m fairseq_struct.hf_import`) become.

    fairseq-train data-bin/tr-ner --user-dir fairseq_struct --task token_classification \\
        --arch bert --restore-file imported/berturk/model.pt ...

The plugin's structure-aware encoder with BERT's embedding: token + 1D position (counted from
0) + token type (segment) embeddings, then a layer norm whose epsilon is BERT's 1e-12. fairseq's
own `roberta` differs in each of these (positions from padding_idx + 1, no token types, 1e-5).
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
