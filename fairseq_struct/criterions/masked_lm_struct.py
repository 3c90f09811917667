"""Masked-LM loss with an optional NSP/SOP loss, and the accuracies that show learning.

loss = MLM cross-entropy per masked token + sentence-pair cross-entropy per pair (the sum of
the two means, as BERT), reported by fairseq in base 2. Also logged: `mlm_accuracy`,
`unigram_accuracy` (always predicting the dictionary's most frequent symbol: the baseline to
beat) and `sentence_accuracy`. For every RobertaModel (roberta, bert2d, bert_elmo).
"""

import math
from typing import Any, Dict, List, Tuple

import torch
import torch.nn.functional as F
from fairseq import metrics
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import FairseqDataclass

from fairseq_struct.pieces.word_boundaries import special_symbol_lookup
from fairseq_struct.tasks.masked_lm_struct import SENTENCE_PAIR_HEAD


@register_criterion("masked_lm_struct", dataclass=FairseqDataclass)
class MaskedLMStructCriterion(FairseqCriterion):
    def __init__(self, task: Any) -> None:
        super().__init__(task)
        dictionary = task.source_dictionary
        counts = torch.tensor(dictionary.count, dtype=torch.float64)
        counts[special_symbol_lookup(dictionary)] = -1
        self.most_frequent_symbol = int(counts.argmax())

    def forward(self, model: Any, sample: Dict[str, Any], reduce: bool = True) -> Tuple:
        # Flat indices of the masked tokens, found by the task's collater: a fixed-size index
        # keeps the step free of host synchronisation (a boolean mask would not).
        positions = sample.get("masked_positions")
        if positions is None:
            raise KeyError(
                "the masked_lm_struct criterion needs sample['masked_positions'] (the flat "
                "indices of the target tokens), which the masked_lm_struct task provides"
            )
        num_masked = positions.numel()
        features, _ = model(**sample["net_input"], features_only=True)
        masked_features = features.reshape(-1, features.size(-1)).index_select(0, positions)
        logits = model.encoder.output_layer(masked_features)
        targets = sample["target"].reshape(-1).index_select(0, positions)
        # Counts stay tensors: fairseq sums them and reads them only when it logs.
        unigram_correct = targets.eq(self.most_frequent_symbol).sum()
        output_targets = getattr(model.encoder, "output_targets", None)
        if output_targets is not None:
            targets = output_targets(targets)
        mlm_loss = F.cross_entropy(logits.float(), targets, reduction="sum")
        nsentences = sample["nsentences"]
        # The gradient is divided by sample_size: the masked-token count. A batch without a
        # masked token (e.g. the empty lines between documents with --sample-break-mode eos)
        # weighs nothing, unless it has sentence pairs to learn from.
        has_pairs = "sentence_target" in sample
        sample_size = num_masked or (nsentences if has_pairs else 0)
        loss = mlm_loss
        logging_output = {
            "ntokens": sample["ntokens"],
            "nsentences": nsentences,
            "sample_size": sample_size,
            "num_masked": num_masked,
            "mlm_loss": mlm_loss.data,
            "mlm_correct": logits.argmax(-1).eq(targets).sum(),
            "unigram_correct": unigram_correct,
        }
        if has_pairs:
            sentence_logits = model.classification_heads[SENTENCE_PAIR_HEAD](features)
            sentence_target = sample["sentence_target"]
            sentence_loss = F.cross_entropy(
                sentence_logits.float(), sentence_target, reduction="sum"
            )
            loss = loss + sentence_loss * (sample_size / nsentences)
            logging_output["sentence_loss"] = sentence_loss.data
            logging_output["sentence_correct"] = (
                sentence_logits.argmax(-1).eq(sentence_target).sum()
            )
        logging_output["loss"] = loss.data
        return loss, sample_size, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs: List[Dict[str, Any]]) -> None:
        def total(key: str) -> float:
            return sum(log.get(key, 0) for log in logging_outputs)

        sample_size = total("sample_size")
        num_masked = total("num_masked")
        nsentences = total("nsentences")
        metrics.log_scalar(
            "loss", total("loss") / (sample_size or 1) / math.log(2), sample_size, round=3
        )
        metrics.log_scalar(
            "mlm_loss", total("mlm_loss") / (num_masked or 1) / math.log(2), num_masked, round=3
        )
        metrics.log_scalar(
            "mlm_accuracy", 100 * total("mlm_correct") / (num_masked or 1), num_masked, round=2
        )
        metrics.log_scalar(
            "unigram_accuracy",
            100 * total("unigram_correct") / (num_masked or 1),
            num_masked,
            round=2,
        )
        if any("sentence_loss" in log for log in logging_outputs):
            metrics.log_scalar(
                "sentence_loss",
                total("sentence_loss") / nsentences / math.log(2),
                nsentences,
                round=3,
            )
            metrics.log_scalar(
                "sentence_accuracy",
                100 * total("sentence_correct") / nsentences,
                nsentences,
                round=2,
            )

    @staticmethod
    def logging_outputs_can_be_summed() -> bool:
        return True
