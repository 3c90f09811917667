"""Let fairseq 0.12 checkpoints load under torch's `weights_only=True`, and nothing more.

Since torch 2.6, `torch.load` refuses by default the few Python objects that fairseq 0.12
checkpoints hold besides tensors. Importing this module (importing `fairseq_struct` does) adds
exactly those classes to torch's safe globals; a file that needs any other global is still refused.
"""

import argparse
import collections
import pickle
import re
from contextlib import contextmanager
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, Union

import numpy as np
import torch
from fairseq import checkpoint_utils
from fairseq.distributed.utils import _TensorPlaceholder
from omegaconf import AnyNode, DictConfig, ListConfig
from omegaconf.base import ContainerMetadata, Metadata

SafeGlobal = Union[Callable, Tuple[Callable, str]]

# The function numpy pickles arrays with; taken from the pickle protocol itself because its
# module moved from numpy.core.multiarray (numpy 1.x) to numpy._core.multiarray (numpy 2).
_reconstruct_ndarray = np.ndarray(0).__reduce__()[0]

# Found by loading and resuming every checkpoint of tiny stock runs (transformer, lstm; adam,
# adafactor; --eval-bleu as best metric, --store-ema, 2-process gloo with --fast-stat-sync).
FAIRSEQ_CHECKPOINT_GLOBALS: List[SafeGlobal] = [
    # cfg["model"] of a model registered without a dataclass (every legacy --arch, stock
    # `transformer` and `lstm` included), cfg["optimizer"] of adafactor, and the top-level
    # "args" of checkpoints written before fairseq moved to OmegaConf.
    argparse.Namespace,
    # extra_state["metrics"]["valid"] keeps --eval-bleu's n-gram counts and totals as numpy
    # arrays. An array is rebuilt by _reconstruct(ndarray, shape, dtype) and then __setstate__;
    # both names of _reconstruct are listed so checkpoints written under either numpy load.
    np.ndarray,
    (_reconstruct_ndarray, "numpy._core.multiarray._reconstruct"),
    (_reconstruct_ndarray, "numpy.core.multiarray._reconstruct"),
    # The arrays' dtype, rebuilt by numpy.dtype("i8"/"f8", ...) and then given its state, which
    # torch allows only for allow-listed types: int64 when the counts are summed as Python ints
    # (one process), float64 when multi-process --fast-stat-sync sums them as double tensors.
    np.dtype,
    np.dtypes.Int64DType,
    np.dtypes.Float64DType,
    # Multi-process resume: fairseq's broadcast_object sends rank 0's loaded state, its cfg an
    # OmegaConf DictConfig, through torch.load; these are the types that pickle holds.
    DictConfig,
    ListConfig,
    AnyNode,
    ContainerMetadata,
    Metadata,
    Any,
    dict,
    list,
    int,
    collections.defaultdict,
    _TensorPlaceholder,
]

# How torch's weights-only unpickler names what it refused (torch/_weights_only_unpickler.py).
_REFUSED_GLOBAL_PATTERNS = [
    re.compile(r"GLOBAL (\S+) was not an allowed global"),
    re.compile(r"unsupported GLOBAL (\S+) whose module \S+ is blocked"),
    re.compile(r"but got <class '([^']+)'>"),
    re.compile(r"unrecognized function (<[^>]+>|\S+)"),
]


class CheckpointSecurityError(pickle.UnpicklingError):
    """A checkpoint needs a global that is not allow-listed for `weights_only` loading."""

    def __init__(self, path: str, refused_global: str) -> None:
        self.path = path
        self.refused_global = refused_global
        super().__init__(
            f"{path}: refused to load checkpoint: its pickle needs the global {refused_global}, "
            "which is not allow-listed for torch.load(weights_only=True). fairseq_struct "
            "allows only the classes fairseq checkpoints hold, because unpickling any other "
            "global can run code. If you trust this file, allow-list the class with "
            "torch.serialization.add_safe_globals([...]) before loading it."
        )


def register_safe_globals() -> None:
    """Allow-list FAIRSEQ_CHECKPOINT_GLOBALS for `weights_only` loading.

    Idempotent: torch keeps its safe globals in a set.
    """
    torch.serialization.add_safe_globals(FAIRSEQ_CHECKPOINT_GLOBALS)


def refused_global(message: str) -> Optional[str]:
    """The global named in a torch weights-only `UnpicklingError` message, or None."""
    for pattern in _REFUSED_GLOBAL_PATTERNS:
        match = pattern.search(message)
        if match:
            return match.group(1)
    return None


@contextmanager
def refusals_named(path: str) -> Iterator[None]:
    """Turn torch's refusal of a global while `path` loads into a CheckpointSecurityError that
    names the file and the global; any other unpickling error passes unchanged."""
    try:
        yield
    except pickle.UnpicklingError as error:
        name = refused_global(str(error))
        if name is None:
            raise
        raise CheckpointSecurityError(path, name) from error


def load_checkpoint(path: str, arg_overrides: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Load a checkpoint with fairseq's own loader (upgrades included), `weights_only` on.

    Raises:
        CheckpointSecurityError: the file needs a global outside the allow-list.
    """
    with refusals_named(path):
        return checkpoint_utils.load_checkpoint_to_cpu(path, arg_overrides)


register_safe_globals()
