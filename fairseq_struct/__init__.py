"""fairseq-struct: structure-aware models for morphologically rich languages, as a fairseq plugin.

fairseq imports this package for `--user-dir` (fairseq-train, fairseq-generate, torchrun and
the workers they spawn) after importing itself: the package then registers its components
(`register`, which imports `plugin`: the repairs of fairseq and torch, then every model, task,
criterion and text encoder). A command line that needs no model (`fairseq-struct score`, ...)
imports the package before fairseq, and so starts without torch or fairseq; the code that
loads a model (the commands, the hub's `from_pretrained`) calls `fairseq_struct.register()`.
"""

import sys


def register() -> None:
    """Apply the repairs of fairseq and torch and register every component with fairseq (what
    `--user-dir` does); once is enough, again costs nothing."""
    from fairseq_struct import plugin  # noqa: F401


if "fairseq" in sys.modules:  # imported by fairseq (--user-dir), or after it
    register()
