"""Repairs of fairseq 0.12 (fairseq-fixed 0.12.3.1) and torch 2.x, applied when this is imported.

Each module repairs one behaviour of the libraries as installed, without forking them: it
replaces or wraps one function or adds one missing name, and the tests under `tests/fixes/`
show the behaviour before and after (`grouped_steps` is not a repair: what the two optimizer
repairs share). `fairseq_struct.plugin` imports this package first. What the four
`multi_tensor_*` repairs save is counted by benchmarks/bench_update_launches.py (figures in
benchmarks/README.md).

| module | what goes wrong without it | upstream |
|---|---|---|
| `last_partial_batch` | `batch_by_size` drops the last partial batch whenever `--required-batch-size-multiple` > 1 (default 8): sentences vanish from training epochs, validation, `--eval-bleu` and `fairseq-generate` | facebookresearch/fairseq#5036, #5351 |
| `numpy_compat` | `np.compat.long` (`TokenBlockDataset`, `filter_indices_by_size`) raises AttributeError under numpy 2 | same family as facebookresearch/fairseq#4945 (numpy aliases removed) |
| `checkpoint_safety` | torch >= 2.6 loads with `weights_only=True`, so `--restore-file` and `fairseq-generate --path` refuse fairseq checkpoints; only the classes they hold are allow-listed | facebookresearch/fairseq#5610 (fixed after 0.12 by #5611, with `weights_only=False`) |
| `multiprocess_training` | `torchrun ... fairseq-train` is not recognised at world size 1, divides by `cuda.device_count()` == 0 on CPUs, passes `device_ids` to DDP for CPU modules, and gathers logs through CUDA tensors | facebookresearch/fairseq#2879, #3318 |
| `bf16_without_tpu` | `--bf16` implies `--tpu` and then fails without torch_xla | facebookresearch/fairseq#2983, #4089 |
| `multi_tensor_adam` | without apex, `--optimizer adam` runs fairseq's own `Adam.step`, ~11 operations per parameter tensor, each a kernel launch on a GPU; here the same operations in fairseq's order through `_foreach_*`, a few a step whatever the number of tensors, bit for bit on a CPU, with fairseq's state | fairseq's answer is apex's FusedAdam (facebookresearch/fairseq#940, #3174) |
| `multi_tensor_grad_norm` | without apex's `multi_tensor_l2norm`, `clip_grad_norm_` (every update: gnorm, `--clip-norm`) takes the norm tensor by tensor and warns "amp_C fused kernels unavailable" each time; here `_foreach_norm`, fairseq's total and clipping | fairseq's answer is apex (facebookresearch/fairseq#3174) |
| `multi_tensor_master_weights` | `--fp16` / `--bf16` copy the gradients into the fp32 master weights, zero them and copy the weights back one tensor at a time (never flattened under `--bf16`): three launches per tensor an update; here one `_foreach_*` operation each | none filed (the bf16 choice is fairseq's, "faster on TPUs") |
| `multi_tensor_adafactor` | `Adafactor.step` (`--optimizer adafactor`, the paper's translation recipe) runs ~25 operations per parameter tensor, each a kernel launch on a GPU and a dispatch on a CPU; grouped here (stacked matrices, `_foreach_*`) with fairseq's arithmetic and state | fairseq's answer is apex (facebookresearch/fairseq#940), which has no Adafactor |
| `overflow_without_cuda` | `--fp16` on a machine without CUDA stops at its first gradient overflow: the trainer's overflow handler makes its zero norm with `.cuda()`; here the step is skipped and the scale lowered as on a GPU | none filed |
| `stock_update` | not a repair: `FAIRSEQ_STRUCT_STOCK_UPDATE=1` puts fairseq's own update back (the four `multi_tensor_*` repairs off, the others on), and a training process logs which repairs are in force | – |
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
from fairseq_struct.fixes.stock_update import (
    log_active_repairs,
    restore_stock_updates,
    stock_update_requested,
)

if stock_update_requested():
    restore_stock_updates()
log_active_repairs()
