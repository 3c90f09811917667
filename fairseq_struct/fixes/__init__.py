"""Repairs of fairseq 0.12 (fairseq-fixed 0.12.3.1) and torch 2.x, applied when this is imported.

Each module repairs one behaviour of the libraries as installed, without forking them;
`fairseq_struct.plugin` imports this package first. What each repairs, with its upstream report:
docs/troubleshooting.md, "fairseq repairs".
"""

from fairseq_struct.fixes import bf16_without_tpu  # noqa: F401
from fairseq_struct.fixes import checkpoint_safety  # noqa: F401
from fairseq_struct.fixes import last_partial_batch  # noqa: F401
from fairseq_struct.fixes import multi_tensor_adafactor  # noqa: F401
from fairseq_struct.fixes import multi_tensor_adam  # noqa: F401
from fairseq_struct.fixes import multi_tensor_grad_norm  # noqa: F401
from fairseq_struct.fixes import multi_tensor_master_weights  # noqa: F401
from fairseq_struct.fixes import multiprocess_training  # noqa: F401
from fairseq_struct.fixes import numpy_compat  # noqa: F401
from fairseq_struct.fixes import overflow_without_cuda  # noqa: F401
from fairseq_struct.fixes import quiet_warnings  # noqa: F401
from fairseq_struct.fixes.stock_update import (
    log_active_repairs,
    restore_stock_updates,
    stock_update_requested,
)

if stock_update_requested():
    restore_stock_updates()
log_active_repairs()
