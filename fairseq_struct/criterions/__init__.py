"""Registered criteria."""

from fairseq_struct.criterions import (  # noqa: F401
    extractive_qa,
    masked_lm_struct,
    sentence_prediction_f1,
    token_classification,
)
