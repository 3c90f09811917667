"""Giving a mapped checkpoint's pages back as a model copies its weights out of them.

`model_checkpoint.read_state` maps a checkpoint file instead of reading it. The pages of a
tensor are read when the model copies it, and then count in the process's memory (RSS) for as
long as any tensor of the file lives: until the load is over, the weights are held twice, the
model's copy and the file's pages. Here each module, right after it has copied its own tensors,
gives their pages back (`madvise(MADV_DONTNEED)`), so that the load holds the model plus one
module's weights at most (the prediction figures: benchmarks/README.md,
bench_finetune_vs_transformers.py).

The pages are clean pages of a private file mapping: a tensor read again after its pages were
given back (a tied weight, copied by a second module) is read from the file again. On systems
other than Linux nothing is given back (the load works as before, at its old peak).
"""

import ctypes
import mmap
import sys
from contextlib import contextmanager
from typing import Dict, Iterator, List, Mapping, Set, Tuple

from torch import Tensor, nn

StorageSpan = Tuple[int, int]  # (address, bytes)

_MADV_DONTNEED = getattr(mmap, "MADV_DONTNEED", None)
_libc = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" and _MADV_DONTNEED else None


def storage_span(tensor: Tensor) -> StorageSpan:
    storage = tensor.untyped_storage()
    return storage.data_ptr(), storage.nbytes()


def give_back_pages(span: StorageSpan) -> None:
    """Give back the whole pages inside `span` (those it shares with a neighbour stay)."""
    if _libc is None:
        return
    address, size = span
    first = -(-address // mmap.PAGESIZE) * mmap.PAGESIZE
    end = (address + size) // mmap.PAGESIZE * mmap.PAGESIZE
    if end <= first:
        return
    if _libc.madvise(ctypes.c_void_p(first), ctypes.c_size_t(end - first), _MADV_DONTNEED):
        raise OSError(ctypes.get_errno(), "madvise(MADV_DONTNEED) of a mapped checkpoint failed")


@contextmanager
def pages_given_back_as_loaded(model: nn.Module, mapped: Mapping[str, object]) -> Iterator[None]:
    """While `model.load_state_dict` runs in this block, each module gives back the pages of the
    tensors it has copied, where they are the storages of `mapped` (the state dict as the file
    was mapped: what fairseq's upgrades made anew is left alone, in memory of its own)."""
    spans: Set[StorageSpan] = {
        storage_span(value) for value in mapped.values() if isinstance(value, Tensor)
    }
    taken: Dict[int, List[StorageSpan]] = {}

    def before_copy(module: nn.Module, state_dict: Mapping[str, object], prefix: str, *_) -> None:
        names = list(module._parameters) + list(module._buffers)
        tensors = [state_dict.get(prefix + name) for name in names]
        copied = [storage_span(tensor) for tensor in tensors if isinstance(tensor, Tensor)]
        taken[id(module)] = [span for span in copied if span in spans]

    def after_copy(module: nn.Module, _incompatible_keys) -> None:
        for span in taken.pop(id(module), []):
            give_back_pages(span)

    handles = []
    for module in model.modules():
        handles.append(module.register_load_state_dict_pre_hook(before_copy))
        handles.append(module.register_load_state_dict_post_hook(after_copy))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
