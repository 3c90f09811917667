"""fairseq "bpe" encoders of the project, for fairseq-interactive and the hub (`--bpe ...`)."""

from fairseq_struct.encoders import struct_sentencepiece  # noqa: F401  (registers the encoder)
