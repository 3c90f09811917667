"""An accelerator emulated on the CPU, so that device-placement bugs fail without a GPU.

Inside `OtherDevice()`, `.to(OTHER_DEVICE)` (or `module_to_other_device`,
`move_to_other_device`) gives tensors that compute on the CPU but refuse, as CUDA does, any
operation that mixes them with a CPU tensor of one or more dimensions, naming the operation and
the calling line. CUDA's exceptions hold: 0-d CPU tensors as scalars, CPU index tensors.
"""

from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

# The device the emulated tensors report: one a CPU-only torch has, on which no real kernel
# runs here (every operation is answered by `OtherDevice`), and which is not "cpu", so code
# that branches on `device.type == "cpu"` takes its accelerator path as on a GPU.
OTHER_DEVICE = torch.device("meta")

# Operations CUDA runs with CPU tensors among its arguments: the index tensors of advanced
# indexing (copied to the device by the kernel) and copies between devices.
_MIXING_ALLOWED = {
    torch.ops.aten.index.Tensor,
    torch.ops.aten.index_put.default,
    torch.ops.aten.index_put_.default,
    torch.ops.aten._index_put_impl_.default,
    torch.ops.aten.copy_.default,
    torch.ops.aten._to_copy.default,
    torch.ops.aten.lift_fresh.default,
}


class OnOtherDevice(torch.Tensor):
    """A tensor that reports `OTHER_DEVICE` and keeps its values in a CPU tensor, `cpu_values`."""

    cpu_values: torch.Tensor

    @staticmethod
    def __new__(cls, values: torch.Tensor) -> "OnOtherDevice":
        wrapper = torch.Tensor._make_wrapper_subclass(
            cls,
            values.shape,
            strides=values.stride(),
            storage_offset=values.storage_offset(),
            dtype=values.dtype,
            layout=values.layout,
            device=OTHER_DEVICE,
            requires_grad=values.requires_grad,
        )
        wrapper.cpu_values = values
        return wrapper

    # `.tolist()` copies the values to the host, as from CUDA; `.numpy()` is refused, as for CUDA.
    def tolist(self) -> Any:
        return self.cpu_values.tolist()

    def numpy(self, *, force: bool = False) -> Any:
        raise TypeError(
            f"can't convert {OTHER_DEVICE.type} device type tensor to numpy. Use Tensor.cpu() "
            "to copy the tensor to host memory first."
        )

    def __repr__(self) -> str:
        return f"OnOtherDevice({self.cpu_values!r})"

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        # Only reached outside `OtherDevice()` (the mode answers first inside it).
        raise RuntimeError(f"{func}: a tensor on the emulated device used outside OtherDevice()")


class DevicePlacementError(RuntimeError):
    """An operation mixed the emulated device with a CPU tensor, as CUDA would refuse."""


def _is_other_device(device: Any) -> bool:
    return device is not None and torch.device(device) == OTHER_DEVICE


def _refuse_cpu_operands(func, flat_args: list, emulated: list) -> None:
    if not emulated or func in _MIXING_ALLOWED:
        return
    on_cpu = [
        arg
        for arg in flat_args
        if isinstance(arg, torch.Tensor)
        and not isinstance(arg, OnOtherDevice)
        and arg.device.type == "cpu"
        and arg.dim() > 0
    ]
    if on_cpu:
        raise DevicePlacementError(
            f"{func}: expected all tensors to be on the same device, but found a CPU tensor of "
            f"shape {tuple(on_cpu[0].shape)} beside a {OTHER_DEVICE} tensor of shape "
            f"{tuple(emulated[0].shape)} (a tensor made without device=?)"
        )


def _unwrap(value: Any) -> Any:
    return value.cpu_values if isinstance(value, OnOtherDevice) else value


def _wrap(value: Any) -> Any:
    if isinstance(value, torch.Tensor) and not isinstance(value, OnOtherDevice):
        return OnOtherDevice(value)
    return value


class OtherDevice(TorchDispatchMode):
    """While active, tensors moved or created on `OTHER_DEVICE` are `OnOtherDevice` tensors,
    computed on the CPU, and CPU tensors mixed with them are refused (`DevicePlacementError`)."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        flat_args, _ = tree_flatten((args, kwargs))
        emulated = [arg for arg in flat_args if isinstance(arg, OnOtherDevice)]
        _refuse_cpu_operands(func, flat_args, emulated)
        if "device" in kwargs:
            # A factory function or a copy that names its device: the emulated device gives
            # an emulated tensor, any other one a plain tensor (`.cpu()`, `torch.arange(n)`).
            wrap_result = _is_other_device(kwargs["device"])
            if wrap_result:
                kwargs = dict(kwargs, device=torch.device("cpu"))
        else:
            wrap_result = bool(emulated)
        result = func(*tree_map(_unwrap, args), **tree_map(_unwrap, kwargs))
        if not wrap_result or func is torch.ops.aten._local_scalar_dense.default:
            return result
        # In-place operations return their first argument: give back the same wrapper.
        if args and isinstance(args[0], OnOtherDevice) and result is args[0].cpu_values:
            return args[0]
        return tree_map(_wrap, result)


def move_to_other_device(value: Any) -> Any:
    """Every tensor in a (nested) sample moved to `OTHER_DEVICE`; call inside `OtherDevice()`."""
    return tree_map(lambda x: x.to(OTHER_DEVICE) if isinstance(x, torch.Tensor) else x, value)


def module_to_other_device(module: torch.nn.Module) -> torch.nn.Module:
    """`module.to(OTHER_DEVICE)` that keeps tied weights tied; call inside `OtherDevice()`.

    A plain `.to()` keeps a parameter object (and so the tying of shared embeddings) only where
    the new tensor has the parameter's own tensor type, as a CUDA tensor has; for a tensor
    subclass it makes a new parameter per module. Swapping the tensors in place keeps them."""
    swapping = torch.__future__.get_swap_module_params_on_conversion()
    torch.__future__.set_swap_module_params_on_conversion(True)
    try:
        return module.to(OTHER_DEVICE)
    finally:
        torch.__future__.set_swap_module_params_on_conversion(swapping)
