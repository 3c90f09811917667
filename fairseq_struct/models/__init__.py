"""Registered models: the TP-Transformer and its relative-position Transformer baseline, and the
masked-LM encoders BERT2D and BERT-ELMo."""

from fairseq_struct.models import (  # noqa: F401
    bert2d,
    bert_elmo,
    tp_transformer,
    transformer_relpos,
)
