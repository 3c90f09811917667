"""What a translation asks for and gets back (`inference.translator`), without the model code:
the command line builds these before it loads torch and fairseq."""

from dataclasses import dataclass
from typing import Optional

PRECISIONS = ("fp32", "fp16", "bf16")


class TranslatorError(ValueError):
    """A model or data directory that cannot translate; the message says which and why."""


@dataclass(frozen=True)
class DecodingOptions:
    beam: int = 5
    nbest: int = 1
    lenpen: float = 1.0
    # The longest hypothesis: max_len_a * source length + max_len_b; None for both: the data
    # directory's fitted limit (morph.length_limit), else fairseq's 0 and 200.
    max_len_a: Optional[float] = None
    max_len_b: Optional[int] = None
    max_tokens: Optional[int] = 12000  # fairseq-generate's default batches
    batch_size: Optional[int] = None
    cpu: bool = False
    precision: str = "fp32"


@dataclass(frozen=True)
class Hypothesis:
    text: str  # plain text
    score: float  # fairseq's: the length-normalised log-probability, base 2 as in H- lines
