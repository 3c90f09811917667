"""Registered models: the TP-Transformer and its relative-position Transformer baseline, the
masked-LM encoders BERT2D and BERT-ELMo, and BERT (what imported BERT-family checkpoints become)."""

from fairseq_struct.models import (  # noqa: F401
    bert,
    bert2d,
    bert_elmo,
    tp_transformer,
    transformer_relpos,
)
