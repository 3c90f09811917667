"""`--bpe struct_sentencepiece`: raw text in and out exactly as the project's preparation has it.

Unlike fairseq's `--bpe sentencepiece`, it normalises whitespace before encoding, as
`morph.prepare` does, and decodes with `pieces_to_text` (boundary marks dropped), so that
fairseq-interactive, the hub and `fairseq-struct translate` see the source tokens training saw
and give plain text.
"""

from dataclasses import dataclass, field

from fairseq.data.encoders import register_bpe
from fairseq.dataclass import FairseqDataclass

from fairseq_struct.pieces.markers import WORD_START, pieces_to_text


@dataclass
class StructSentencePieceConfig(FairseqDataclass):
    sentencepiece_model: str = field(
        default="???",
        metadata={"help": "the spm.model of the prepared data directory"},
    )


@register_bpe("struct_sentencepiece", dataclass=StructSentencePieceConfig)
class StructSentencePiece:
    def __init__(self, cfg: StructSentencePieceConfig) -> None:
        # Imported here: the plugin's import (in every training worker) stays clear of the
        # preparation code and SentencePiece (tests/test_plugin_imports.py).
        from fairseq_struct.corpus_io import normalize_whitespace
        from fairseq_struct.morph.sentencepiece_model import SentencePieceModel

        self.model = SentencePieceModel(cfg.sentencepiece_model)
        self.normalize_whitespace = normalize_whitespace

    def encode(self, x: str) -> str:
        """Space-separated pieces of the whitespace-normalised line ("" for an empty line)."""
        # As the preparation did: the models' SentencePiece (identity normalisation) keeps
        # every space as it is.
        line = self.normalize_whitespace(x)
        return " ".join(self.model.encode(line)) if line else ""

    def decode(self, x: str) -> str:
        return pieces_to_text(x)

    def is_beginning_of_word(self, x: str) -> bool:
        return x.startswith(WORD_START)
