"""Find the operations that make the host wait for the device, on any device, CPU included.

`HostSyncRecorder` records, from the ATen calls PyTorch dispatches, every operation whose result
the host must read (`.item()`, `torch.equal`) or whose output shape depends on values (`nonzero`,
a bool-mask index): run the step inside `with HostSyncRecorder() as recorder:`, then
`assert not recorder.syncs, recorder.report(recorder.syncs)`.
"""

import os
import traceback
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
from torch.utils._python_dispatch import TorchDispatchMode

# ATen operations that read a value back to the host or size their output by the data.
SYNCING_OPERATIONS = frozenset(
    {
        "aten._local_scalar_dense",  # .item(), int(t), float(t), bool(t)
        "aten.is_nonzero",
        "aten.equal",
        "aten.nonzero",
        "aten.masked_select",
        "aten._unique",
        "aten._unique2",
        "aten.unique_dim",
        "aten.unique_consecutive",
        "aten.unique_dim_consecutive",
        "aten.bincount",  # sized by the largest value
    }
)
# Operations that sync only for some arguments: bool-mask indexing, data-dependent repeats.
_MASK_INDEXING = frozenset(
    {"aten.index", "aten.index_put", "aten.index_put_", "aten._index_put_impl_"}
)


_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep


@dataclass(frozen=True)
class HostSync:
    operation: str
    stack: traceback.StackSummary

    @property
    def site(self) -> Tuple[str, str]:
        """(file, function) of the innermost caller outside torch: the code that synced."""
        for frame in reversed(self.stack):
            if not frame.filename.startswith(_TORCH_DIR):
                return frame.filename, frame.name
        return "<torch>", "<torch>"


def _is_mask(value: Any) -> bool:
    return isinstance(value, torch.Tensor) and value.dtype in (torch.bool, torch.uint8)


def _syncs(operation: str, args: Sequence[Any], kwargs: Dict[str, Any]) -> bool:
    if operation in SYNCING_OPERATIONS:
        return True
    if operation in _MASK_INDEXING:
        indices = args[1] if len(args) > 1 else kwargs.get("indices", ())
        return any(_is_mask(index) for index in indices if index is not None)
    if operation == "aten.repeat_interleave":
        repeats_is_tensor = len(args) > 0 and isinstance(args[0], torch.Tensor)
        return repeats_is_tensor and kwargs.get("output_size") is None
    return False


class HostSyncRecorder(TorchDispatchMode):
    """Records every host-synchronising ATen call made inside the `with` block (forward and,
    through autograd, backward), with the Python stack that made it."""

    def __init__(self) -> None:
        super().__init__()
        self.syncs: List[HostSync] = []

    def __torch_dispatch__(
        self, func: Any, types: Any, args: Any = (), kwargs: Optional[Dict] = None
    ):
        kwargs = kwargs or {}
        operation = str(func.overloadpacket)
        if _syncs(operation, args, kwargs):
            self.syncs.append(HostSync(operation, traceback.extract_stack()[:-1]))
        return func(*args, **kwargs)

    def syncs_outside(self, allowed_sites: Sequence[Tuple[str, str]] = ()) -> List[HostSync]:
        """The syncs not made by one of `allowed_sites`: (file name ending, function) pairs."""
        return [
            sync
            for sync in self.syncs
            if not any(
                sync.site[0].endswith(file) and sync.site[1] == function
                for file, function in allowed_sites
            )
        ]

    @staticmethod
    def report(syncs: Sequence[HostSync]) -> str:
        """The syncs, each with the last frames of the code that made it (assertion message)."""
        return "\n".join(
            f"host sync #{number}: {sync.operation} in {sync.site[1]} ({sync.site[0]})\n"
            + "".join(traceback.format_list(sync.stack[-8:]))
            for number, sync in enumerate(syncs, start=1)
        )
