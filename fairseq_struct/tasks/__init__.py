"""Registered tasks."""

from fairseq_struct.tasks import (  # noqa: F401
    extractive_qa,
    masked_lm_struct,
    token_classification,
    translation_morph,
)
