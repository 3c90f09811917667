"""Stop fairseq-fixed 0.12.3.1 from silently dropping sentences when it batches them.

Its compiled `batch_by_size` loses the last partial batch whenever
`--required-batch-size-multiple` is above 1 (the default is 8), in training, validation and
fairseq-generate alike; the missing tail is batched again without the multiple and appended.
Installed on import in place of `fairseq.data.data_utils.batch_by_size`.
"""

from typing import Callable, List, Optional

import numpy as np
from fairseq.data import data_utils

_stock_batch_by_size = data_utils.batch_by_size


def batch_by_size(
    indices,
    num_tokens_fn: Optional[Callable[[int], int]],
    num_tokens_vec: Optional[np.ndarray] = None,
    max_tokens: Optional[int] = None,
    max_sentences: Optional[int] = None,
    required_batch_size_multiple: int = 1,
    fixed_shapes: Optional[np.ndarray] = None,
) -> List[np.ndarray]:
    if not isinstance(indices, np.ndarray):
        indices = np.fromiter(indices, dtype=np.int64, count=-1)
    batches = _stock_batch_by_size(
        indices,
        num_tokens_fn,
        num_tokens_vec,
        max_tokens,
        max_sentences,
        required_batch_size_multiple,
        fixed_shapes,
    )
    # The batches it returns are consecutive runs of indices: the missing sentences are the tail.
    covered = sum(len(batch) for batch in batches)
    if fixed_shapes is not None or covered == len(indices):
        return batches
    tail_tokens = num_tokens_vec[covered:] if num_tokens_vec is not None else None
    tail = _stock_batch_by_size(
        indices[covered:], num_tokens_fn, tail_tokens, max_tokens, max_sentences, 1, None
    )
    return list(batches) + list(tail)


data_utils.batch_by_size = batch_by_size
