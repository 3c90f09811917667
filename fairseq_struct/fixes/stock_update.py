"""`FAIRSEQ_STRUCT_STOCK_UPDATE=1` puts fairseq's own per-tensor update back in place of the four
`multi_tensor_*` repairs (the other repairs stay), and a training process logs which repairs are
in force (docs/gpus.md)."""

import logging
import os
import sys
from typing import Any, Callable, List

from fairseq import utils
from fairseq.optim.adafactor import Adafactor
from fairseq.optim.adam import Adam
from fairseq.optim.fp16_optimizer import _FP16OptimizerMixin

from fairseq_struct.fixes.multi_tensor_adafactor import stock_step as stock_adafactor_step
from fairseq_struct.fixes.multi_tensor_adam import stock_step as stock_adam_step
from fairseq_struct.fixes.multi_tensor_grad_norm import stock_clip_grad_norm_
from fairseq_struct.fixes.multi_tensor_master_weights import stock_methods as master_weight_methods

logger = logging.getLogger("fairseq_struct.fixes")

STOCK_UPDATE_VARIABLE = "FAIRSEQ_STRUCT_STOCK_UPDATE"
SPEED_REPAIRS = (
    "multi_tensor_adam",
    "multi_tensor_adafactor",
    "multi_tensor_grad_norm",
    "multi_tensor_master_weights",
)
CORRECTNESS_REPAIRS = (
    "last_partial_batch",
    "numpy_compat",
    "checkpoint_safety",
    "multiprocess_training",
    "bf16_without_tpu",
    "overflow_without_cuda",
)


def stock_update_requested() -> bool:
    return os.environ.get(STOCK_UPDATE_VARIABLE, "0") not in ("", "0")


def restore_stock_updates(set_attribute: Callable[[Any, str, Any], None] = setattr) -> None:
    """fairseq's per-tensor Adam and Adafactor steps, gradient norm and master-weight copies
    (set with `set_attribute`: a test passes pytest's `monkeypatch.setattr` to undo them)."""
    set_attribute(Adam, "step", stock_adam_step)
    set_attribute(Adafactor, "step", stock_adafactor_step)
    set_attribute(utils, "clip_grad_norm_", stock_clip_grad_norm_)
    for name, method in master_weight_methods.items():
        set_attribute(_FP16OptimizerMixin, name, method)


def active_repairs() -> List[str]:
    """The repairs in force in this process, the speed ones only where not switched off."""
    speed = [] if Adam.step is stock_adam_step else list(SPEED_REPAIRS)
    return list(CORRECTNESS_REPAIRS) + speed


def log_active_repairs() -> None:
    """One line in a training process (fairseq-train imports the plugin while it parses its
    options, so `fairseq_cli.train` is loaded by then)."""
    if "fairseq_cli.train" not in sys.modules:
        return
    update = (
        f"fairseq's own update ({STOCK_UPDATE_VARIABLE} set)"
        if Adam.step is stock_adam_step
        else f"grouped update; {STOCK_UPDATE_VARIABLE}=1 runs fairseq's own"
    )
    logger.info("fairseq_struct repairs in force: %s (%s)", ", ".join(active_repairs()), update)
