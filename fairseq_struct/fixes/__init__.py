"""Repairs of fairseq 0.12 (fairseq-fixed 0.12.3.1) and torch 2.x, applied when this is imported.

Each module repairs one behaviour of the libraries as installed, without forking them: it
replaces or wraps one function or adds one missing name, and the tests under `tests/fixes/`
show the behaviour before and after. Importing `fairseq_struct` imports this package first.

| module | what goes wrong without it | upstream |
|---|---|---|
| `last_partial_batch` | `batch_by_size` drops the last partial batch whenever `--required-batch-size-multiple` > 1 (default 8): sentences vanish from training epochs, validation, `--eval-bleu` and `fairseq-generate` | facebookresearch/fairseq#5036, #5351 |
| `numpy_compat` | `np.compat.long` (`TokenBlockDataset`, `filter_indices_by_size`) raises AttributeError under numpy 2 | same family as facebookresearch/fairseq#4945 (numpy aliases removed) |
| `checkpoint_safety` | torch >= 2.6 loads with `weights_only=True`, so `--restore-file` and `fairseq-generate --path` refuse fairseq checkpoints; only the classes they hold are allow-listed | facebookresearch/fairseq#5610 (fixed after 0.12 by #5611, with `weights_only=False`) |
| `multiprocess_training` | `torchrun ... fairseq-train` is not recognised at world size 1, divides by `cuda.device_count()` == 0 on CPUs, passes `device_ids` to DDP for CPU modules, and gathers logs through CUDA tensors | facebookresearch/fairseq#2879, #3318 |
| `bf16_without_tpu` | `--bf16` implies `--tpu` and then fails without torch_xla | facebookresearch/fairseq#2983, #4089 |
| `multi_tensor_adafactor` | `Adafactor.step` (`--optimizer adafactor`, the paper's translation recipe) runs ~25 operations per parameter tensor: a third of a tiny TP-Transformer's CPU update, thousands of kernel launches a step on a GPU; grouped here (stacked matrices, `_foreach_*`) with fairseq's arithmetic and state | fairseq's answer is apex (facebookresearch/fairseq#940), which has no Adafactor |
| `cli_logging` | importing fairseq leaves the root logger at DEBUG, so library chatter floods the project's command lines; applied by each command line (`configure_logging()`), not on import | none filed |
"""

from fairseq_struct.fixes import bf16_without_tpu  # noqa: F401
from fairseq_struct.fixes import checkpoint_safety  # noqa: F401
from fairseq_struct.fixes import last_partial_batch  # noqa: F401
from fairseq_struct.fixes import multi_tensor_adafactor  # noqa: F401
from fairseq_struct.fixes import multiprocess_training  # noqa: F401
from fairseq_struct.fixes import numpy_compat  # noqa: F401
