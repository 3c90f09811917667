"""fairseq-struct: structure-aware models for morphologically rich languages, as a fairseq plugin.

When fairseq imports the package (`--user-dir`), it registers its components (`register`). A
command that needs no model imports it before fairseq, and so starts without torch or fairseq;
code that loads a model calls `fairseq_struct.register()` first.
"""

import sys


def register() -> None:
    """Apply the repairs of fairseq and torch and register every component with fairseq (what
    `--user-dir` does); once is enough, again costs nothing."""
    from fairseq_struct import plugin  # noqa: F401


if "fairseq" in sys.modules:  # imported by fairseq (--user-dir), or after it
    register()
