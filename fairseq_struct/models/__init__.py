"""Registered models: the TP-Transformer and its relative-position Transformer baseline."""

from fairseq_struct.models import tp_transformer, transformer_relpos  # noqa: F401
