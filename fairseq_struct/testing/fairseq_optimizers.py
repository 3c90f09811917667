"""fairseq's optimizer for a list of parameters, built from fairseq-train's own flags the way its
Trainer builds it (FP16Optimizer around it for `--fp16` / `--bf16`, MemoryEfficientFP16Optimizer
for `--memory-efficient-*`), for tests and benchmarks that run updates without a task."""

from typing import List

from fairseq import optim, options
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from torch import nn

import fairseq_struct
from fairseq_struct.fixes.bf16_without_tpu import undo_bf16_implies_tpu

fairseq_struct.register()  # the repairs, as under fairseq-train --user-dir


def build_fairseq_optimizer(params: List[nn.Parameter], flags: List[str]) -> optim.FairseqOptimizer:
    """`flags` as fairseq-train takes them, e.g. ["--optimizer", "adam", "--lr", "1e-3",
    "--bf16"] (the arch and data are not read)."""
    argv = ["unused-data", "--arch", "transformer", "--user-dir", fairseq_struct.__path__[0]]
    parser = options.get_training_parser()
    cfg = convert_namespace_to_omegaconf(options.parse_args_and_arch(parser, argv + flags))
    undo_bf16_implies_tpu(cfg)  # as fairseq-train's call_main does with the plugin
    common = cfg.common
    if common.memory_efficient_fp16 or common.memory_efficient_bf16:
        return optim.MemoryEfficientFP16Optimizer.build_optimizer(cfg, params)
    if common.fp16 or common.bf16:
        return optim.FP16Optimizer.build_optimizer(cfg, params)
    return optim.build_optimizer(cfg.optimizer, params)
