"""Loss and validation metrics of the `token_classification` task (NER, POS).

The loss is the head's, summed over the words of the batch and divided by their number. In
validation the decoded words (Entity-Fix with `--entity-fix`) are scored: NER by `precision`,
`recall` and `f1` (×100; seqeval's default micro scores, the E-F1 of Zöllner et al., from
per-sentence counts that add up across GPUs), POS by `accuracy`.
"""

import math
from typing import Any, Dict, List, Tuple

import torch
from fairseq import metrics
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import FairseqDataclass
from fairseq.logging.meters import safe_round

from fairseq_struct.modules.token_classification_heads import gather_words
from fairseq_struct.tagging.iob import entity_counts, entity_fix


def word_labels(sample: Dict[str, Any], nspecial: int, pad: int) -> Tuple[Any, Any]:
    """The (B, T) word mask (tokens that carry a label) and the labels as head indices."""
    target = sample["target"]
    word_mask = target.ne(pad)
    return word_mask, (target - nspecial).masked_fill(~word_mask, -1)


def decoded_labels(
    head: Any, words: torch.Tensor, mask: torch.Tensor, fix: bool
) -> List[List[str]]:
    predictions = head.decode(words, mask)
    return [entity_fix(tags) for tags in predictions] if fix else predictions


@register_criterion("token_classification", dataclass=FairseqDataclass)
class TokenClassificationCriterion(FairseqCriterion):
    def forward(self, model: Any, sample: Dict[str, Any], reduce: bool = True) -> Tuple:
        task = self.task
        head = task.head(model)
        outputs, _ = model(
            **sample["net_input"],
            features_only=True,
            classification_head_name=task.cfg.classification_head_name,
        )
        labels = task.label_dictionary
        word_mask, targets = word_labels(sample, labels.nspecial, labels.pad())
        words, mask = gather_words(outputs, word_mask)
        gold, _ = gather_words(targets.unsqueeze(-1), word_mask)
        gold = gold.squeeze(-1)
        loss = head.word_loss(words, gold, mask)
        # Counted by the task's collater: a count of word_mask here would be a device tensor
        # that fairseq's trainer reads back (a host synchronisation every step).
        sample_size = sample["nwords"]
        logging_output = {
            "loss": loss.data,
            "ntokens": sample["ntokens"],
            "nsentences": sample["nsentences"],
            "sample_size": sample_size,
            "words": sample_size,
        }
        if not model.training:
            logging_output.update(self._scores(head, words, gold, mask))
        return loss, sample_size, logging_output

    def _scores(self, head: Any, words: torch.Tensor, gold: torch.Tensor, mask: torch.Tensor):
        predictions = decoded_labels(head, words, mask, self.task.cfg.entity_fix)
        names = head.labels
        gold_tags = [
            [names[i] for i in row[: len(predicted)]]
            for row, predicted in zip(gold.tolist(), predictions)
        ]
        if self.task.metric == "accuracy":
            correct = sum(
                p == g for pred, ref in zip(predictions, gold_tags) for p, g in zip(pred, ref)
            )
            return {"correct_words": correct}
        tp = predicted = relevant = 0
        for pred, ref in zip(predictions, gold_tags):
            counts = entity_counts(ref, pred)
            tp, predicted, relevant = tp + counts[0], predicted + counts[1], relevant + counts[2]
        return {"true_entities": tp, "predicted_entities": predicted, "gold_entities": relevant}

    @staticmethod
    def reduce_metrics(logging_outputs: List[Dict[str, Any]]) -> None:
        def total(key: str) -> float:
            return float(sum(log.get(key, 0) for log in logging_outputs))

        words = total("words")
        metrics.log_scalar("loss", total("loss") / max(words, 1) / math.log(2), words, round=3)
        if any("correct_words" in log for log in logging_outputs):
            metrics.log_scalar("_correct_words", total("correct_words"))
            metrics.log_scalar("_words", words)
            metrics.log_derived(
                "accuracy",
                lambda meters: safe_round(
                    100 * meters["_correct_words"].sum / max(meters["_words"].sum, 1), 2
                ),
            )
        if any("true_entities" in log for log in logging_outputs):
            for key in ("true_entities", "predicted_entities", "gold_entities"):
                metrics.log_scalar("_" + key, total(key))
            metrics.log_derived("precision", lambda m: _ratio(m, "_predicted_entities"))
            metrics.log_derived("recall", lambda m: _ratio(m, "_gold_entities"))
            metrics.log_derived("f1", _f1)

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True


def _ratio(meters: Dict[str, Any], denominator: str) -> float:
    total = meters[denominator].sum
    return safe_round(100 * meters["_true_entities"].sum / total, 2) if total else 0.0


def _f1(meters: Dict[str, Any]) -> float:
    tp = meters["_true_entities"].sum
    total = meters["_predicted_entities"].sum + meters["_gold_entities"].sum
    return safe_round(200 * tp / total, 2) if total else 0.0
