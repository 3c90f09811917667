"""Registered tasks."""

from fairseq_struct.tasks import masked_lm_struct, translation_morph  # noqa: F401
