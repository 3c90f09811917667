"""Span decoding of extractive QA and the validation metrics of the fine-tuning criteria."""

import pytest
import torch
from fairseq import metrics

from fairseq_struct.criterions.extractive_qa import ExtractiveQACriterion, SquadAnswersMeter
from fairseq_struct.criterions.sentence_prediction_f1 import SentencePredictionF1Criterion
from fairseq_struct.criterions.token_classification import TokenClassificationCriterion
from fairseq_struct.downstream.qa_answers import (
    answer_text,
    best_answers,
    best_spans,
    window_answers,
)

NEG = -1e4


def test_the_best_span_respects_order_length_and_the_context():
    start = torch.tensor([[9.0, 1.0, 5.0, 0.0, 0.0, 3.0]])
    end = torch.tensor([[9.0, 0.0, 1.0, 2.0, 4.0, 0.0]])
    context = torch.tensor([[False, True, True, True, True, True]])  # position 0 is <s>
    score, first, last = best_spans(start, end, context, max_answer_length=3)
    # (2, 4) scores 5 + 4 = 9; (5, 5) would be 3 + 0; (2, 2) 6; ends before starts never count
    assert (first.item(), last.item(), score.item()) == (2, 4, 9.0)
    score, first, last = best_spans(start, end, context, max_answer_length=2)
    assert (first.item(), last.item(), score.item()) == (2, 3, 7.0)


def test_answer_text_is_cut_from_the_context_by_the_unit_spans():
    window = {
        "context": "Fas (Fez) şehrinde büyüdü.",
        "context_offset": 3,
        "spans": [(0, 3), (4, 9), (10, 18), (19, 25), (25, 26)],
        "question": "q1",
    }
    assert answer_text(window, 3, 5) == "Fas (Fez) şehrinde"
    assert answer_text(window, 6, 7) == "büyüdü."
    assert answer_text(window, 1, 2) == ""  # a span in the question is no answer
    tokens = torch.zeros(1, 9, dtype=torch.long)
    start = torch.full((1, 9), NEG)
    end = torch.full((1, 9), NEG)
    start[0, 4], end[0, 5] = 2.0, 1.0
    assert window_answers(tokens, start, end, [window], 10) == [("q1", 3.0, "(Fez) şehrinde")]


def test_a_question_is_answered_by_its_best_window():
    answers = [("q1", 1.0, "a"), ("q2", 0.5, "x"), ("q1", 3.0, "b"), ("q1", 2.0, "c")]
    assert best_answers(answers) == {"q1": "b", "q2": "x"}


def test_em_and_f1_are_computed_over_the_whole_validation_run():
    with metrics.aggregate(new_root=True) as aggregator:
        ExtractiveQACriterion.reduce_metrics(
            [
                {
                    "loss": 1.0,
                    "sample_size": 2,
                    "answers": [
                        ("q1", 1.0, "Afrikalı Leo", ["Afrikalı Leo"]),
                        ("q2", 2.0, "bir şehir", ["Fas (Fez) şehrinde"]),
                    ],
                }
            ]
        )
        # The second batch holds a better window of q2: it replaces the first answer.
        ExtractiveQACriterion.reduce_metrics(
            [
                {
                    "loss": 1.0,
                    "sample_size": 1,
                    "answers": [("q2", 5.0, "Fas", ["Fas (Fez) şehrinde"])],
                }
            ]
        )
        values = aggregator.get_smoothed_values()
    # q1: EM 1, F1 1; q2: "fas" vs "fas fez şehrinde": P 1, R 1/3, F1 0.5
    assert values["exact_match"] == 50.0
    assert values["f1"] == 75.0


def test_the_answers_meter_survives_a_state_dict_round_trip():
    meter = SquadAnswersMeter()
    meter.update([("q1", 1.0, "x", ["x"])])
    copy = SquadAnswersMeter()
    copy.load_state_dict(meter.state_dict())
    assert copy.scores()["exact_match"] == 100.0


def test_sentence_f1_is_the_macro_f1_of_the_summed_class_counts():
    logs = [
        {
            "loss": 0.0,
            "ntokens": 1,
            "nsentences": 4,
            "sample_size": 4,
            "ncorrect": 3,
            "class_tp": torch.tensor([2, 1]),
            "class_fp": torch.tensor([1, 0]),
            "class_fn": torch.tensor([0, 1]),
        },
        {
            "loss": 0.0,
            "ntokens": 1,
            "nsentences": 2,
            "sample_size": 2,
            "ncorrect": 1,
            "class_tp": torch.tensor([0, 1]),
            "class_fp": torch.tensor([0, 1]),
            "class_fn": torch.tensor([1, 0]),
        },
    ]
    with metrics.aggregate(new_root=True) as aggregator:
        SentencePredictionF1Criterion.reduce_metrics(logs)
        values = aggregator.get_smoothed_values()
    # class 0: tp 2 fp 1 fn 1 -> F1 4/6; class 1: tp 2 fp 1 fn 1 -> 4/6
    assert values["f1"] == pytest.approx(66.67)
    assert values["accuracy"] == pytest.approx(66.7)


def test_entity_f1_and_word_accuracy_come_from_summed_counts():
    logs = [
        {"loss": 0.0, "words": 10, "true_entities": 3, "predicted_entities": 4, "gold_entities": 5},
        {"loss": 0.0, "words": 5, "true_entities": 1, "predicted_entities": 1, "gold_entities": 3},
    ]
    with metrics.aggregate(new_root=True) as aggregator:
        TokenClassificationCriterion.reduce_metrics(logs)
        values = aggregator.get_smoothed_values()
    assert (values["precision"], values["recall"]) == (80.0, 50.0)
    assert values["f1"] == pytest.approx(61.54)  # 2 * 4 / (5 + 8)
    with metrics.aggregate(new_root=True) as aggregator:
        TokenClassificationCriterion.reduce_metrics(
            [
                {"loss": 0.0, "words": 8, "correct_words": 6},
                {"loss": 0.0, "words": 2, "correct_words": 1},
            ]
        )
        assert aggregator.get_smoothed_values()["accuracy"] == 70.0
