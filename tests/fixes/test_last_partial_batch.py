"""fairseq-fixed's batch_by_size drops the last partial batch; the plugin restores it."""

import numpy as np
import pytest
from fairseq.data import data_utils

import fairseq_struct.plugin  # noqa: F401  (installs the fix)


@pytest.mark.parametrize(
    "limits",
    [dict(max_tokens=1000), dict(max_sentences=4), dict(max_tokens=12, max_sentences=3)],
)
def test_every_sentence_is_batched_once_and_in_order(limits):
    indices = np.arange(10, 31)
    batches = data_utils.batch_by_size(
        indices, lambda i: 4, required_batch_size_multiple=8, **limits
    )
    assert np.concatenate(batches).tolist() == indices.tolist()
    for batch in batches:
        assert len(batch) <= limits.get("max_sentences", len(indices))
        assert 4 * len(batch) <= limits.get("max_tokens", 4 * len(indices))


def test_vectorised_token_counts_are_kept_aligned_with_the_tail():
    indices = np.arange(9)
    lengths = np.array([2, 2, 2, 2, 2, 2, 2, 2, 50], dtype=np.int64)
    batches = data_utils.batch_by_size(
        indices, None, num_tokens_vec=lengths, max_tokens=60, required_batch_size_multiple=8
    )
    assert np.concatenate(batches).tolist() == list(range(9))
