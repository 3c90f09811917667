"""Count the ATen operations that launch a kernel, on any device: what an update bound by its
kernel launches costs on a GPU, counted deterministically on a CPU (views and allocations left
out; a `_foreach_*` or fused operation counts once)."""

from collections import Counter
from typing import Any, Callable, Dict, Optional

from torch.utils._python_dispatch import TorchDispatchMode

# Operations that allocate or describe memory without running a kernel (views are told apart by
# their schema, `OpOverload.is_view`).
_NO_KERNEL = frozenset(
    {
        "aten.empty",
        "aten.empty_like",
        "aten.empty_strided",
        "aten.new_empty",
        "aten.new_empty_strided",
        "aten._unsafe_view",
        "aten._reshape_alias",
        "aten.lift_fresh",
        "aten.set_",
        "aten.sym_size",
        "aten.sym_stride",
        "aten.sym_numel",
        "aten.sym_storage_offset",
        "aten.is_same_size",
        "aten.promote_types",
        "aten.resolve_conj",
        "aten.resolve_neg",
    }
)


def launches_a_kernel(func: Any) -> bool:
    """Whether an ATen operation runs a kernel (not a view, an allocation or metadata)."""
    return not func.is_view and str(func.overloadpacket) not in _NO_KERNEL


class KernelOperationCounter(TorchDispatchMode):
    """Counts, by name, the kernel-launching ATen operations run inside the `with` block
    (forward and, through autograd, backward)."""

    def __init__(self) -> None:
        super().__init__()
        self.operations: Counter = Counter()

    def __torch_dispatch__(
        self, func: Any, types: Any, args: Any = (), kwargs: Optional[Dict] = None
    ):
        if launches_a_kernel(func):
            self.operations[str(func.overloadpacket)] += 1
        return func(*args, **(kwargs or {}))

    @property
    def total(self) -> int:
        return sum(self.operations.values())


def count_kernel_operations(function: Callable[[], Any]) -> int:
    """The kernel-launching ATen operations that one call of `function` runs."""
    with KernelOperationCounter() as counter:
        function()
    return counter.total
