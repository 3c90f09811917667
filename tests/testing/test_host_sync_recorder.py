"""HostSyncRecorder: which ATen calls it counts as host synchronisations, and which not."""

import pytest
import torch

from fairseq_struct.testing.host_sync import HostSyncRecorder


def _recorded(step) -> list:
    with HostSyncRecorder() as recorder:
        step()
    return [sync.operation for sync in recorder.syncs]


x = torch.arange(6.0).view(2, 3)


@pytest.mark.parametrize(
    "step,operation",
    [
        (lambda: int(x.sum()), "aten._local_scalar_dense"),
        (lambda: x.max().item(), "aten._local_scalar_dense"),
        (lambda: bool(x.sum() > 0), "aten._local_scalar_dense"),
        (lambda: torch.equal(x, x), "aten.equal"),
        (lambda: x.nonzero(), "aten.nonzero"),
        (lambda: x[x > 2], "aten.index"),
        (lambda: x.masked_select(x > 2), "aten.masked_select"),
        (lambda: torch.unique(x), "aten._unique2"),
        (lambda: torch.bincount(torch.tensor([1, 3])), "aten.bincount"),
        (
            lambda: torch.tensor([1, 2]).repeat_interleave(torch.tensor([2, 1])),
            "aten.repeat_interleave",
        ),
    ],
)
def test_syncing_calls_are_recorded(step, operation):
    assert operation in _recorded(step)


@pytest.mark.parametrize(
    "step",
    [
        lambda: x.index_select(1, torch.tensor([0, 2])),
        lambda: x.gather(1, torch.tensor([[0], [1]])),
        lambda: x.masked_fill(x > 2, 0.0),
        lambda: x[:, torch.tensor([0, 2])],
        lambda: torch.where(x > 2, x, 0.0).sum(dim=1),
        lambda: x.view(-1).reshape(3, 2).transpose(0, 1).contiguous(),
        lambda: torch.tensor([1, 2]).repeat_interleave(2),
        lambda: torch.tensor([1, 2]).repeat_interleave(torch.tensor([2, 1]), output_size=3),
    ],
)
def test_fixed_shape_calls_are_not(step):
    assert _recorded(step) == []


def test_a_sync_in_backward_is_attributed_to_the_calling_code():
    weights = torch.ones(4, requires_grad=True)

    def step():
        (weights[weights > 0] * 2).sum().backward()

    with HostSyncRecorder() as recorder:
        step()
    sites = {sync.site[1] for sync in recorder.syncs}
    assert "step" in sites
    assert "aten.index_put" in [sync.operation for sync in recorder.syncs]  # the backward
    assert "host sync #1: aten.index in step" in recorder.report(recorder.syncs)
