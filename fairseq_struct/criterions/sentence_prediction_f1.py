"""fairseq's `sentence_prediction` loss with accuracy and macro F1 (×100) in validation.

fairseq's own `--report-acc-and-f1` needs the labels 0/1 and gathers every prediction; here labels
may be names (`pos`, `neg`), and per-class counts, summed across batches and GPUs, give
`accuracy` and `f1`, the mean of the classes' F1.
"""

from typing import Any, Dict, List

import torch
import torch.nn.functional as F
from fairseq import metrics
from fairseq.criterions import register_criterion
from fairseq.criterions.sentence_prediction import (
    SentencePredictionConfig,
    SentencePredictionCriterion,
)
from fairseq.logging.meters import safe_round


@register_criterion("sentence_prediction_f1", dataclass=SentencePredictionConfig)
class SentencePredictionF1Criterion(SentencePredictionCriterion):
    def forward(self, model: Any, sample: Dict[str, Any], reduce: bool = True):
        if self.regression_target:
            return super().forward(model, sample, reduce)
        # The parent's forward keeps its logits to itself; calling it and the model again would
        # run every validation batch twice, so its classification loss is repeated here.
        logits, _ = model(
            **sample["net_input"],
            features_only=True,
            classification_head_name=self.classification_head_name,
        )
        targets = model.get_targets(sample, [logits]).view(-1)
        lprobs = F.log_softmax(logits, dim=-1, dtype=torch.float32)
        loss = F.nll_loss(lprobs, targets, reduction="sum")
        predictions = logits.argmax(dim=-1)
        logging_output = {
            "loss": loss.data,
            "ntokens": sample["ntokens"],
            "nsentences": targets.numel(),
            "sample_size": targets.numel(),
            "ncorrect": (predictions == targets).sum(),
        }
        if not model.training:
            classes = torch.arange(logits.size(-1), device=logits.device).unsqueeze(1)
            predicted = predictions.unsqueeze(0).eq(classes)
            gold = targets.unsqueeze(0).eq(classes)
            logging_output["class_tp"] = (predicted & gold).sum(dim=1)
            logging_output["class_fp"] = (predicted & ~gold).sum(dim=1)
            logging_output["class_fn"] = (~predicted & gold).sum(dim=1)
        return loss, targets.numel(), logging_output

    @staticmethod
    def reduce_metrics(logging_outputs: List[Dict[str, Any]]) -> None:
        SentencePredictionCriterion.reduce_metrics(logging_outputs)
        counted = [log for log in logging_outputs if "class_tp" in log]
        if not counted:
            return
        for key in ("class_tp", "class_fp", "class_fn"):
            metrics.log_scalar("_" + key, sum(log[key].cpu().double() for log in counted))
        metrics.log_derived("f1", _macro_f1)

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True


def _macro_f1(meters: Dict[str, Any]) -> float:
    tp, fp, fn = (meters[key].sum for key in ("_class_tp", "_class_fp", "_class_fn"))
    denominator = 2 * tp + fp + fn
    per_class = torch.where(denominator > 0, 2 * tp / denominator.clamp(min=1), 0.0)
    return safe_round(float(100 * per_class.mean()), 2)
