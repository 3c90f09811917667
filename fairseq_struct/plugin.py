"""The plugin proper, what `--user-dir fairseq_struct` loads: the repairs of fairseq 0.12 and torch
(`fairseq_struct.fixes`), then every criterion, model, task and text encoder registered. It
imports no preparation code (Zemberek, SentencePiece training), so training workers stay light."""

from fairseq_struct import fixes  # noqa: F401  (first: the components rely on the repairs)
from fairseq_struct import criterions, encoders, models, tasks  # noqa: F401
