"""Registered criteria."""

from fairseq_struct.criterions import masked_lm_struct  # noqa: F401
