"""Exact match and F1 are SQuAD v1.1's official definitions (design.md §5.4; BERT2D, Table 2)."""

import logging
import re
import string
from collections import Counter

import pytest

from fairseq_struct.eval.squad_metrics import (
    best_over_ground_truths,
    exact_match_score,
    f1_score,
    normalize_answer,
    squad_scores,
)


# The official evaluate-v1.1.py's definitions, verbatim but for formatting: the oracle.
def official_normalize_answer(s):
    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    def lower(text):
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def official_f1_score(prediction, ground_truth):
    prediction_tokens = official_normalize_answer(prediction).split()
    ground_truth_tokens = official_normalize_answer(ground_truth).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


TURKISH_PAIRS = [
    ("Afrikalı Leo (Leo", "Afrikalı Leo"),
    ("1923 yılında", "1923"),
    ("Ankara’da, Türkiye'nin başkentinde", "Ankara’da"),
    ("İstanbul Boğazı", "istanbul boğazı"),
    ("the Eiffel Tower", "Eiffel tower"),
    ("a an the", "an"),
    ("«Nutuk» adlı eser", "Nutuk"),
    ("Mustafa Kemal Atatürk", "Gazi Mustafa Kemal"),
]


def test_normalization_removes_case_ascii_punctuation_articles_and_extra_spaces():
    assert normalize_answer("  The  Eiffel-Tower, (Paris)! ") == "eiffeltower paris"
    assert normalize_answer("an apple a day") == "apple day"
    # Articles are removed as whole words only.
    assert normalize_answer("Theatre Anadolu") == "theatre anadolu"


def test_turkish_typographic_apostrophe_is_not_ascii_and_stays():
    assert normalize_answer("Ankara’da") == "ankara’da"
    assert normalize_answer("Ankara'da") == "ankarada"


@pytest.mark.parametrize("prediction, ground_truth", TURKISH_PAIRS)
def test_scores_equal_the_official_script(prediction, ground_truth):
    assert normalize_answer(prediction) == official_normalize_answer(prediction)
    assert exact_match_score(prediction, ground_truth) == (
        official_normalize_answer(prediction) == official_normalize_answer(ground_truth)
    )
    assert f1_score(prediction, ground_truth) == official_f1_score(prediction, ground_truth)


def test_articles_and_case_do_not_break_an_exact_match():
    assert exact_match_score("the Eiffel Tower", "Eiffel tower") is True
    assert f1_score("the Eiffel Tower", "Eiffel tower") == 1.0


def test_repeated_token_counts_once_in_the_overlap():
    # precision 2/3, recall 1: F1 = 2·(2/3·1)/(2/3 + 1) = 0.8
    assert f1_score("Afrikalı Leo (Leo", "Afrikalı Leo") == pytest.approx(0.8, abs=1e-12)
    assert exact_match_score("Afrikalı Leo (Leo", "Afrikalı Leo") is False


def test_no_common_token_scores_zero():
    assert f1_score("Ankara", "İstanbul") == 0.0
    assert exact_match_score("Ankara", "İstanbul") is False


def test_answers_that_normalise_to_nothing_match_exactly_but_have_f1_zero():
    # v1.1's quirk, kept: "" == "" but no common token.
    assert exact_match_score("the", "a !") is True
    assert f1_score("the", "a !") == 0.0


def test_best_ground_truth_is_taken():
    ground_truths = ["Mustafa Kemal", "Gazi Mustafa Kemal Atatürk", "Atatürk"]
    assert best_over_ground_truths(exact_match_score, "Atatürk", ground_truths) is True
    # against "Mustafa Kemal": P = 2/3, R = 1 → 0.8; against the second: P = 1, R = 3/4 → 6/7
    f1 = best_over_ground_truths(f1_score, "Mustafa Kemal Atatürk", ground_truths)
    assert f1 == pytest.approx(6 / 7, abs=1e-12)


def test_corpus_scores_are_means_times_100_and_unanswered_questions_score_zero(caplog):
    answers = {
        "q1": ["Eiffel tower"],
        "q2": ["Afrikalı Leo"],
        "q3": ["Ankara"],
        "q4": ["1923", "1923 yılında"],
    }
    predictions = {"q1": "the Eiffel Tower", "q2": "Afrikalı Leo (Leo", "q3": "İstanbul"}
    predictions["not-a-question"] = "ignored"
    with caplog.at_level(logging.WARNING):
        scores = squad_scores(predictions, answers)

    assert scores["exact_match"] == pytest.approx(100 * (1 + 0 + 0 + 0) / 4)
    assert scores["f1"] == pytest.approx(100 * (1 + 0.8 + 0 + 0) / 4)
    assert scores["questions"] == 4
    assert scores["unanswered"] == 1
    assert "Unanswered question q4 will receive score 0." in caplog.text


def test_corpus_scores_reject_empty_gold_and_questions_without_answers():
    with pytest.raises(ValueError, match="no questions"):
        squad_scores({}, {})
    with pytest.raises(ValueError, match="'q1' has no ground-truth answer"):
        squad_scores({"q1": "x"}, {"q1": []})
