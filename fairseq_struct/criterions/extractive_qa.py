"""Loss and validation EM / F1 of the `extractive_qa` task.

Loss: the mean of the start and end cross-entropies per window (BERT's SQuAD loss; a window
without the answer points at `<s>`), summed over windows. A question's answer is its best window
over the whole validation run (`SquadAnswersMeter`), scored as `exact_match` and `f1` (×100,
SQuAD v1.1), so `--best-checkpoint-metric f1` picks checkpoints by F1.
"""

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch.nn.functional as F
from fairseq import metrics
from fairseq.criterions import FairseqCriterion, register_criterion
from fairseq.dataclass import FairseqDataclass
from fairseq.logging.meters import Meter, safe_round

from fairseq_struct.downstream.qa_answers import best_answers, window_answers
from fairseq_struct.eval.squad_metrics import squad_scores

ANSWERS_METER = "_squad_answers"


class SquadAnswersMeter(Meter):
    """Every window answer of a validation run, and the SQuAD scores of the best per question."""

    def __init__(self) -> None:
        self.reset()

    def update(self, answers: Sequence[Tuple[str, float, str, List[str]]]) -> None:
        for question, score, text, gold in answers:
            self.answers.append((question, score, text))
            self.gold[question] = list(gold)
        self._scores = None

    def reset(self) -> None:
        self.answers: List[Tuple[str, float, str]] = []
        self.gold: Dict[str, List[str]] = {}
        self._scores: Optional[Dict[str, float]] = None

    def state_dict(self) -> Dict[str, Any]:
        return {"answers": self.answers, "gold": self.gold}

    def load_state_dict(self, state_dict: Dict[str, Any]) -> None:
        self.answers = [tuple(answer) for answer in state_dict["answers"]]
        self.gold = dict(state_dict["gold"])
        self._scores = None

    def scores(self) -> Dict[str, float]:
        """EM and F1 of the best window per question, computed once per set of answers (both
        derived metrics read them)."""
        if self._scores is None:
            self._scores = squad_scores(best_answers(self.answers), self.gold)
        return self._scores

    @property
    def smoothed_value(self) -> Optional[float]:
        return None


@register_criterion("extractive_qa", dataclass=FairseqDataclass)
class ExtractiveQACriterion(FairseqCriterion):
    def __init__(self, task: Any) -> None:
        super().__init__(task)
        self.collecting_answers = False

    def forward(self, model: Any, sample: Dict[str, Any], reduce: bool = True) -> Tuple:
        logits, _ = model(
            **sample["net_input"],
            features_only=True,
            classification_head_name=self.task.cfg.classification_head_name,
        )
        start_logits, end_logits = logits.float().unbind(dim=-1)
        padding = sample["net_input"]["src_tokens"].eq(self.padding_idx)
        start_logits = start_logits.masked_fill(padding, float("-inf"))
        end_logits = end_logits.masked_fill(padding, float("-inf"))
        loss = (
            F.cross_entropy(start_logits, sample["start_positions"], reduction="sum")
            + F.cross_entropy(end_logits, sample["end_positions"], reduction="sum")
        ) / 2
        windows = sample["nsentences"]
        logging_output = {
            "loss": loss.data,
            "ntokens": sample["ntokens"],
            "nsentences": windows,
            "sample_size": windows,
        }
        self.collecting_answers = not model.training
        if self.collecting_answers:
            answers = window_answers(
                sample["net_input"]["src_tokens"],
                start_logits,
                end_logits,
                sample["windows"],
                self.task.cfg.max_answer_length,
            )
            logging_output["answers"] = [
                (question, score, text, window["answers"])
                for (question, score, text), window in zip(answers, sample["windows"])
            ]
        return loss, windows, logging_output

    @staticmethod
    def reduce_metrics(logging_outputs: List[Dict[str, Any]]) -> None:
        windows = sum(log.get("sample_size", 0) for log in logging_outputs)
        loss = sum(float(log.get("loss", 0)) for log in logging_outputs)
        metrics.log_scalar("loss", loss / max(windows, 1) / math.log(2), windows, round=3)
        answers = [answer for log in logging_outputs for answer in log.get("answers", [])]
        if answers:
            metrics.log_custom(SquadAnswersMeter, ANSWERS_METER, answers)
            metrics.log_derived("exact_match", lambda m: _score(m, "exact_match"))
            metrics.log_derived("f1", lambda m: _score(m, "f1"))

    def logging_outputs_can_be_summed(self) -> bool:
        # Validation answers are lists of texts: gathered, never summed. fairseq asks right
        # after the forward passes whose outputs it aggregates, so training stays summed.
        return not self.collecting_answers


def _score(meters: Dict[str, Any], key: str) -> float:
    return safe_round(meters[ANSWERS_METER].scores()[key], 2)
