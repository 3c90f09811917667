"""Give fairseq 0.12 the one `numpy.compat` name it uses, which numpy 2 removed.

fairseq-fixed 0.12.3.1 still writes `np.compat.long` (`TokenBlockDataset`,
`filter_indices_by_size`); the alias of int is added only when numpy lacks it.
"""

import types

import numpy

try:
    numpy.compat  # noqa: B018  (numpy 1.x has it: nothing to do)
except AttributeError:
    numpy.compat = types.SimpleNamespace(long=int)  # type: ignore[attr-defined]
