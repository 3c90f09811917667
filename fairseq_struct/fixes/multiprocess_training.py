"""Let stock `torchrun ... fairseq-train` run multi-process training, also on CPUs.

Two gaps of fairseq 0.12, filled when the plugin is imported (fairseq imports it while parsing
the command line, before it sets up distributed training):

- It recognises a torchrun launch only when `--distributed-world-size` is already above 1 (the
  default is the number of GPUs, 1 without any), and then sets
  `device_id = rank % torch.cuda.device_count()`, which divides by zero without GPUs. When
  torchrun's environment variables are set, world size and ranks now come from them and the
  device from LOCAL_RANK (also right on nodes with several GPUs).
- Its default `--ddp-backend pytorch_ddp` passes `device_ids=[device_id]` to torch's
  DistributedDataParallel, which torch refuses for CPU modules. On a CPU the model is wrapped
  with fairseq's own `legacy_ddp` instead (the same gradient all-reduce), and the log says so.
- Its `all_gather_list` (how the trainer gathers logging outputs that cannot be summed, e.g.
  the QA answers of `extractive_qa`'s validation) builds a `torch.cuda.ByteTensor`, which fails
  without CUDA. Without CUDA it now gathers with `torch.distributed.all_gather_object` (gloo).

Every other launch goes through fairseq's functions unchanged.

    torchrun --nproc_per_node 2 $(which fairseq-train) data-bin/en-tr \\
        --user-dir fairseq_struct --cpu --distributed-backend gloo ...
"""

import logging
import os
from typing import Any, List

import fairseq.models
import torch
from fairseq.distributed import utils as distributed_utils

logger = logging.getLogger(__name__)

_TORCHRUN_VARIABLES = ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "LOCAL_RANK")
_stock_infer_init_method = distributed_utils.infer_init_method
_stock_distributed_model = fairseq.models.DistributedFairseqModel
_stock_all_gather_list = distributed_utils.all_gather_list


def infer_init_method(cfg, force_distributed: bool = False) -> None:
    launched_by_torchrun = all(name in os.environ for name in _TORCHRUN_VARIABLES)
    if (
        not launched_by_torchrun
        or int(os.environ["WORLD_SIZE"]) < 2
        or cfg.distributed_init_method is not None
        or cfg.tpu
        or cfg.pipeline_model_parallel
    ):
        _stock_infer_init_method(cfg, force_distributed)
        return
    cfg.distributed_init_method = "env://"
    cfg.distributed_world_size = int(os.environ["WORLD_SIZE"])
    cfg.distributed_rank = int(os.environ["RANK"])
    cfg.device_id = int(os.environ["LOCAL_RANK"])
    cfg.distributed_no_spawn = True  # torchrun already started one process per rank
    logger.info(
        "torchrun launch: rank %d of %d (local rank %d)",
        cfg.distributed_rank,
        cfg.distributed_world_size,
        cfg.device_id,
    )


def distributed_model(args, model, process_group, device):
    if device.type == "cpu" and args.ddp_backend in {"c10d", "pytorch_ddp"}:
        logger.info("--ddp-backend %s needs GPUs; using legacy_ddp on the CPU", args.ddp_backend)
        args.ddp_backend = "legacy_ddp"
    return _stock_distributed_model(args, model, process_group, device)


def all_gather_list(data: Any, group: Any = None, max_size: int = 16384) -> List[Any]:
    if torch.cuda.is_available():
        return _stock_all_gather_list(data, group, max_size)
    if group is None:
        group = distributed_utils.get_global_group()
    gathered: List[Any] = [None] * distributed_utils.get_world_size(group)
    torch.distributed.all_gather_object(gathered, data, group=group)
    return gathered


distributed_utils.all_gather_list = all_gather_list
distributed_utils.infer_init_method = infer_init_method
fairseq.models.DistributedFairseqModel = distributed_model
