"""Let `fairseq-train --bf16` train in bfloat16 on GPUs (and CPUs), not only on TPUs.

fairseq 0.12 sets `args.tpu = True` whenever `--bf16` is given and then fails without torch_xla
(facebookresearch/fairseq#2983, #4089). Without torch_xla the flag is set back before
`call_main` and the trainer read it; with torch_xla, fairseq's behaviour is kept.
"""

import importlib.util
import logging
from typing import Any

from fairseq.distributed import utils as distributed_utils

logger = logging.getLogger(__name__)

_stock_call_main = distributed_utils.call_main


def torch_xla_available() -> bool:
    return importlib.util.find_spec("torch_xla") is not None


def undo_bf16_implies_tpu(cfg: Any) -> None:
    """`tpu` back to False for --bf16 where no TPU can exist: in `common` and in every group
    that copied it (distributed_training decides from it how to start workers, the optimizer
    whether to run on XLA)."""
    if not (cfg.common.bf16 and cfg.common.tpu) or torch_xla_available():
        return
    for group in cfg.values():
        if group is not None and hasattr(group, "tpu"):
            group.tpu = False
    logger.info("--bf16 without torch_xla: bfloat16 training on GPU/CPU, not on a TPU")


def call_main(cfg: Any, main: Any, **kwargs: Any) -> None:
    undo_bf16_implies_tpu(cfg)
    _stock_call_main(cfg, main, **kwargs)


distributed_utils.call_main = call_main
