"""The plugin proper: apply the repairs of fairseq 0.12 and torch listed in `fairseq_struct.fixes`,
then register every criterion, model, architecture, task and text encoder (`--bpe`) with
fairseq. Importing it is what `--user-dir fairseq_struct` does; nothing here imports the
preparation code (Zemberek, SentencePiece training, Morfessor), so training workers stay light.
"""

from fairseq_struct import fixes  # noqa: F401  (first: the components rely on the repairs)
from fairseq_struct import criterions, encoders, models, tasks  # noqa: F401
