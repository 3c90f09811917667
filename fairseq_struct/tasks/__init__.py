"""Registered tasks."""

from fairseq_struct.tasks import translation_morph  # noqa: F401
