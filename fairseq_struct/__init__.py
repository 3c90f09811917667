"""fairseq-struct: structure-aware models for morphologically rich languages, as a fairseq plugin.

Importing this package registers every model, architecture, task and criterion with fairseq
(`--user-dir fairseq_struct`), and allow-lists the classes fairseq checkpoints hold so that
torch's `weights_only` loading accepts them, and lets stock `torchrun ... fairseq-train` start
multi-process training (also on CPUs). It also stops fairseq-fixed from dropping the last
partial batch of every epoch, validation and generation run (see batching_fix), and gives
fairseq the `numpy.compat.long` that numpy 2 removed (see numpy_compat), and lets `--bf16`
train on GPUs and CPUs instead of implying a TPU (see bf16_without_tpu).
"""

from fairseq_struct import batching_fix  # noqa: F401
from fairseq_struct import bf16_without_tpu  # noqa: F401
from fairseq_struct import checkpoint_safety  # noqa: F401
from fairseq_struct import criterions  # noqa: F401
from fairseq_struct import models  # noqa: F401
from fairseq_struct import multiprocess_training  # noqa: F401
from fairseq_struct import numpy_compat  # noqa: F401
from fairseq_struct import tasks  # noqa: F401
