"""Let `fairseq-train --fp16` skip an overflowing update on a machine without CUDA.

On a gradient overflow, fairseq's `Trainer.train_step` sets the norm to
`torch.tensor(0.0).cuda()`, which stops `--fp16 --cpu` at its first overflow. Off CUDA the step
is finished as fairseq's handler would (gradients zeroed, no update, the lowered loss scale
logged); on CUDA, fairseq's own step runs.
"""

from typing import Any, List, Optional

from fairseq.logging import metrics
from fairseq.trainer import Trainer

stock_train_step = Trainer.train_step


def train_step(self: Trainer, samples: List[Any], raise_oom: bool = False) -> Optional[Any]:
    loss_scaling = self.cfg.common.fp16 or self.cfg.common.memory_efficient_fp16
    # (A step that fairseq retries after running out of memory is already watched.)
    if self.cuda or not loss_scaling or "clip_grad_norm" in vars(self):
        return stock_train_step(self, samples, raise_oom)
    overflows: List[OverflowError] = []
    clip_grad_norm = self.clip_grad_norm

    def clip_and_note_overflow(clip_norm: float) -> Any:
        try:
            return clip_grad_norm(clip_norm)
        except OverflowError as overflow:
            overflows.append(overflow)
            raise

    self.clip_grad_norm = clip_and_note_overflow
    try:
        return stock_train_step(self, samples, raise_oom)
    except Exception:
        if not overflows:
            raise
        # What fairseq's `except OverflowError` would have done after its `.cuda()` line.
        with metrics.aggregate("train"):
            self.zero_grad()
            loss_scale = self.optimizer.scaler.loss_scale
            metrics.log_scalar("loss_scale", loss_scale, priority=700, round=4, weight=0)
            metrics.log_stop_time("train_wall")
        return None
    finally:
        del self.clip_grad_norm


Trainer.train_step = train_step
