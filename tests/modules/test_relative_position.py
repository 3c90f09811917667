"""Shaw et al.'s bucket table (modules/relative_position.py): clip(j - i, -k, k) + k for the
last T_q of T_k positions, read from a table shared by every layer, and made only when a longer
length comes."""

import pytest
import torch

from fairseq_struct.modules.relative_position import RelativePositionEmbeddings
from fairseq_struct.testing.operation_count import count_kernel_operations


def _formula(query_len: int, key_len: int, k: int) -> torch.Tensor:
    index = torch.empty(query_len, key_len, dtype=torch.long)
    for i in range(query_len):
        query_position = key_len - query_len + i
        for j in range(key_len):
            index[i, j] = min(max(j - query_position, -k), k) + k
    return index


@pytest.mark.parametrize("k", [1, 3, 16])
def test_every_length_and_decoding_step_gets_the_formula(k):
    relative = RelativePositionEmbeddings(k, head_dim=2)
    # Lengths up and down, past the table's growth step (64), and decoding's one query.
    for query_len, key_len in [(5, 5), (1, 1), (70, 70), (3, 3), (1, 9), (1, 130), (130, 130)]:
        index = relative.bucket_index(query_len, key_len, torch.device("cpu"))
        assert torch.equal(index, _formula(query_len, key_len, k)), (query_len, key_len)


def test_the_layers_share_one_table_made_once():
    first, second = RelativePositionEmbeddings(7, 4), RelativePositionEmbeddings(7, 8)
    cpu = torch.device("cpu")
    first.bucket_index(200, 200, cpu)
    assert count_kernel_operations(lambda: second.bucket_index(150, 150, cpu)) == 0
    assert count_kernel_operations(lambda: first.bucket_index(1, 180, cpu)) == 0
    assert count_kernel_operations(lambda: first.bucket_index(300, 300, cpu)) > 0


def test_one_querys_rows_give_the_tables_key_and_value_terms():
    """A decoding step's single query: q·(k_j + a^K_ij) and Σ_j α_ij (v_j + a^V_ij) equal
    q·k_j + key_logits and Σ_j α_ij v_j + value_term (float64: rounding aside, the same sums)."""
    torch.manual_seed(0)
    relative = RelativePositionEmbeddings(3, head_dim=5).double()
    q = torch.randn(2, 4, 1, 5, dtype=torch.float64)
    k, v = torch.randn(2, 4, 9, 5, dtype=torch.float64), torch.randn(
        2, 4, 9, 5, dtype=torch.float64
    )
    index = relative.bucket_index(1, 9, torch.device("cpu"))
    key_rows, value_rows = relative.rows(index[0])
    logits = q @ (k + key_rows).transpose(2, 3)
    torch.testing.assert_close(logits, q @ k.transpose(2, 3) + relative.key_logits(q, index))
    probs = logits.softmax(-1)
    expected = probs @ v + relative.value_term(probs, index)
    torch.testing.assert_close(probs @ (v + value_rows), expected)
