"""fairseq's own update, for comparisons: the functions that the multi-tensor repairs of
`fairseq_struct.fixes` replace, put back in this process.

    python -c "from fairseq_struct.testing.stock_fairseq import stock_fairseq_train; \
stock_fairseq_train()" DATA --user-dir ... (fairseq-train's arguments)
"""

import sys

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


def restore_stock_updates() -> None:
    """fairseq's per-tensor Adam and Adafactor steps, gradient norm and master-weight copies."""
    Adam.step = multi_tensor_adam.stock_step
    Adafactor.step = multi_tensor_adafactor.stock_step
    utils.clip_grad_norm_ = multi_tensor_grad_norm.stock_clip_grad_norm_
    for name, method in multi_tensor_master_weights.stock_methods.items():
        setattr(_FP16OptimizerMixin, name, method)


def stock_fairseq_train() -> None:
    """fairseq-train (its arguments from the command line) with fairseq's own update."""
    from fairseq_cli.train import cli_main

    restore_stock_updates()
    sys.argv[0] = "fairseq-train"
    cli_main()
