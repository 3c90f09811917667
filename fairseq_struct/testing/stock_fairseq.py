"""fairseq's own update, for comparisons: the functions that the multi-tensor repairs of
`fairseq_struct.fixes` replace, put back in this process (tests/training/test_update_parity.py
runs fairseq-train after it)."""

from typing import Any, Callable

from fairseq import utils
from fairseq.optim.adafactor import Adafactor
from fairseq.optim.adam import Adam
from fairseq.optim.fp16_optimizer import _FP16OptimizerMixin

from fairseq_struct.fixes import (
    multi_tensor_adafactor,
    multi_tensor_adam,
    multi_tensor_grad_norm,
    multi_tensor_master_weights,
)


def restore_stock_updates(set_attribute: Callable[[Any, str, Any], None] = setattr) -> None:
    """fairseq's per-tensor Adam and Adafactor steps, gradient norm and master-weight copies
    (set with `set_attribute`: a test passes pytest's `monkeypatch.setattr` to undo them)."""
    set_attribute(Adam, "step", multi_tensor_adam.stock_step)
    set_attribute(Adafactor, "step", multi_tensor_adafactor.stock_step)
    set_attribute(utils, "clip_grad_norm_", multi_tensor_grad_norm.stock_clip_grad_norm_)
    for name, method in multi_tensor_master_weights.stock_methods.items():
        set_attribute(_FP16OptimizerMixin, name, method)
