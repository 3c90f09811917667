"""fairseq-struct: structure-aware models for morphologically rich languages, as a fairseq plugin.

fairseq imports this package for `--user-dir` (fairseq-train, fairseq-generate, torchrun and
the workers they spawn), after importing itself: the package then registers its components
(`fairseq_struct.plugin`). A command line that needs no model (`fairseq-struct score`, ...)
imports the package before fairseq, and so starts without torch or fairseq; the commands and
Python users that load a model `import fairseq_struct.plugin` themselves.
"""

import sys

if "fairseq" in sys.modules:  # imported by fairseq (--user-dir), or after it
    from fairseq_struct import plugin  # noqa: F401
