"""Let stock `torchrun ... fairseq-train` run multi-process training, also on CPUs (docs/gpus.md).

Under torchrun, world size, ranks and device come from its environment (fairseq 0.12 needs
`--distributed-world-size` > 1 and divides by the GPU count); on a CPU the model is wrapped in
fairseq's `legacy_ddp` (torch's DDP refuses `device_ids` there), and without CUDA
`all_gather_list` gathers through `all_gather_object`. Every other launch is fairseq's own.
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
