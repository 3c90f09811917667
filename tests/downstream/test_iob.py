"""IOB2 tagging schemes of NER fine-tuning (Zöllner et al., section 4; design.md §5.4)."""

import random
from typing import List

import pytest
from seqeval.metrics import f1_score, precision_score, recall_score
from seqeval.scheme import IOB2, Tokens

from fairseq_struct.tagging.iob import (
    count_iob2_violations,
    cse_decode,
    cse_targets,
    entity_counts,
    entity_f1,
    entity_fix,
    entity_types,
    iob1_to_iob2,
    is_iob_tag,
    split_tag,
    to_iob2,
)

TYPES = ["PER", "LOC", "ORG"]
ALL_TAGS = ["O"] + [f"{prefix}-{kind}" for kind in TYPES for prefix in "BI"]
CSE_CLASSES = ["O", "PER", "LOC"]

# Corpora without any gold or predicted entity are deliberate: seqeval warns that their ratios
# are ill-defined (and sets them to 0, as `entity_f1` does).
pytestmark = pytest.mark.filterwarnings("ignore:.*ill-defined:UserWarning")


def random_iob2(rng: random.Random, length: int) -> List[str]:
    tags: List[str] = []
    for _ in range(length):
        draw = rng.random()
        if draw < 0.4 or (draw >= 0.7 and (not tags or tags[-1] == "O")):
            tags.append("O")
        elif draw < 0.7:
            tags.append("B-" + rng.choice(TYPES))
        else:
            tags.append("I-" + tags[-1][2:])
    return tags


def random_tags(rng: random.Random, length: int) -> List[str]:
    """Any tags, IOB2 violations included, as a token-wise softmax may predict them."""
    return [rng.choice(ALL_TAGS) for _ in range(length)]


def strict_entities(tags: List[str]) -> dict:
    """seqeval's strict IOB2 entities of one sentence: start -> (type, end exclusive)."""
    return {entity.start: (entity.tag, entity.end) for entity in Tokens(tags, IOB2).entities}


# ----------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    "tag, expected",
    [
        ("O", ("O", "")),
        ("B-PER", ("B", "PER")),
        ("I-PER", ("I", "PER")),
        ("B-LOC-x", ("B", "LOC-x")),
    ],
)
def test_split_tag(tag, expected):
    assert split_tag(tag) == expected


@pytest.mark.parametrize("tag", ["", "B", "B-", "PER", "E-PER", "S-PER", "b-PER", "O-PER", "o"])
def test_split_tag_rejects_non_iob_tags_naming_them(tag):
    with pytest.raises(ValueError, match=repr(tag)):
        split_tag(tag)


def test_entity_types_in_order_of_first_label():
    assert entity_types(["O", "B-PER", "I-LOC", "I-PER", "B-LOC", "B-ORG"]) == ["PER", "LOC", "ORG"]
    assert entity_types(["O"]) == []


def test_iob1_to_iob2_starts_every_entity_with_b():
    iob1 = ["I-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-LOC", "I-PER", "I-PER"]
    iob2 = ["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    assert count_iob2_violations(iob1) == 3
    assert iob1_to_iob2(iob1) == iob2
    assert count_iob2_violations(iob2) == 0
    assert iob1_to_iob2(iob2) == iob2


def test_count_iob2_violations():
    assert count_iob2_violations([]) == 0
    assert count_iob2_violations(["I-PER"]) == 1
    assert count_iob2_violations(["B-PER", "I-LOC", "I-LOC", "O", "I-ORG", "B-ORG", "I-ORG"]) == 2


# ----------------------------------------------------------------------------- Entity-Fix


def test_entity_fix_reproduces_table_5():
    prediction = ["I-Per", "O", "O", "B-Loc", "I-Org", "I-Org", "I-Loc"]
    fixed = ["B-Per", "O", "O", "B-Loc", "I-Loc", "I-Loc", "I-Loc"]
    assert entity_fix(prediction) == fixed


@pytest.mark.parametrize(
    "prediction, fixed",
    [
        (["I-PER"], ["B-PER"]),
        (["I-PER", "I-PER", "I-LOC"], ["B-PER", "I-PER", "I-PER"]),
        (["O", "I-PER", "I-PER", "B-LOC"], ["O", "O", "O", "B-LOC"]),
        (["B-PER", "I-LOC", "O", "I-LOC"], ["B-PER", "I-PER", "O", "O"]),
        (["B-LOC", "I-ORG", "I-PER", "I-LOC", "I-ORG"], ["B-LOC"] + ["I-LOC"] * 4),
        (["B-PER", "B-LOC", "I-PER"], ["B-PER", "B-LOC", "I-LOC"]),
        ([], []),
    ],
)
def test_entity_fix_hand_cases(prediction, fixed):
    assert entity_fix(prediction) == fixed


def test_entity_fix_keeps_valid_iob2():
    rng = random.Random(1)
    for _ in range(200):
        tags = random_iob2(rng, rng.randint(0, 10))
        assert entity_fix(tags) == tags


def test_entity_fix_only_grows_entities_over_forbidden_tags():
    """2,000 random predictions (3 types): the rule changes only forbidden I- tags, which belong
    to no strict IOB2 entity; every entity keeps its type and start and can only grow to the
    right over tags that belonged to no entity; the only new entity is one opened by an I- at
    the start."""
    rng = random.Random(2)
    for _ in range(2000):
        prediction = random_tags(rng, rng.randint(1, 9))
        fixed = entity_fix(prediction)
        assert count_iob2_violations(fixed) == 0 and len(fixed) == len(prediction)
        assert entity_fix(fixed) == fixed
        changed = {i for i, (a, b) in enumerate(zip(prediction, fixed)) if a != b}
        assert bool(changed) == bool(count_iob2_violations(prediction))
        assert all(prediction[i].startswith("I-") for i in changed)
        before, after = strict_entities(prediction), strict_entities(fixed)
        covered = {i for start, (_, end) in before.items() for i in range(start, end)}
        assert not changed & covered
        for start, (kind, end) in before.items():
            assert after[start][0] == kind and after[start][1] >= end
            assert not set(range(end, after[start][1])) & covered
        new = set(after) - set(before)
        assert new == ({0} if prediction[0].startswith("I-") else set())


def test_entity_fix_can_lower_entity_f1_contrary_to_section_4_3():
    # Zöllner et al. claim E-F1 "can never decrease"; extending a correct entity over a forbidden
    # I- tag makes it wrong. Strict and default seqeval modes both drop here.
    gold, prediction = [["B-LOC", "O"]], [["B-LOC", "I-PER"]]
    fixed = [entity_fix(prediction[0])]
    assert fixed == [["B-LOC", "I-LOC"]]
    assert f1_score(gold, prediction, mode="strict", scheme=IOB2) == 1.0
    assert f1_score(gold, prediction) == pytest.approx(2 / 3)
    assert f1_score(gold, fixed, mode="strict", scheme=IOB2) == 0.0
    assert f1_score(gold, fixed) == 0.0


# ----------------------------------------------------------------------------- CSE


def one_hot(classes: List[str], names: List[str]) -> List[List[float]]:
    return [[float(name == kind) for name in names] for kind in classes]


def entity_probs(kinds: str) -> List[List[float]]:
    """Class probabilities favouring PER ("P") or LOC ("L") per token."""
    rows = {"P": [0.2, 0.7, 0.1], "L": [0.2, 0.1, 0.7]}
    return [rows[kind] for kind in kinds]


def test_cse_targets_reproduce_table_4():
    tags = ["B-Per", "O", "O", "B-Loc", "I-Loc", "I-Loc", "I-Loc"]
    starts, ends, classes = cse_targets(tags)
    assert starts == [1, 0, 0, 1, 0, 0, 0]
    assert ends == [1, 0, 0, 0, 0, 0, 1]
    assert classes == ["Per", "O", "O", "Loc", "Loc", "Loc", "Loc"]


def test_cse_targets_of_adjacent_entities():
    starts, ends, classes = cse_targets(["B-PER", "B-PER", "I-PER", "B-LOC", "O"])
    assert (starts, ends) == ([1, 1, 0, 1, 0], [1, 0, 1, 1, 0])
    assert classes == ["PER", "PER", "PER", "LOC", "O"]


def test_cse_targets_reject_iob1():
    with pytest.raises(ValueError, match=r"tag 2 \('I-LOC'\)"):
        cse_targets(["B-PER", "O", "I-LOC"])


def test_cse_missing_end_between_two_starts_is_the_best_end_in_between():
    starts = [0.9, 0.1, 0.2, 0.1, 0.8, 0.1]
    # Token 4 (the next start) has the highest end probability before 5 but is not in range.
    ends = [0.1, 0.3, 0.45, 0.2, 0.49, 0.9]
    tags = cse_decode(starts, ends, entity_probs("PPPPLL"), CSE_CLASSES)
    assert tags == ["B-PER", "I-PER", "I-PER", "O", "B-LOC", "I-LOC"]
    ends[3] = 0.48  # the token just before the next start is in range
    tags = cse_decode(starts, ends, entity_probs("PPPPLL"), CSE_CLASSES)
    assert tags == ["B-PER", "I-PER", "I-PER", "I-PER", "B-LOC", "I-LOC"]


def test_cse_missing_start_between_two_ends_is_the_best_start_in_between():
    # Token 2 ends the first entity, so its start probability 0.45 is out of range.
    starts = [0.1, 0.9, 0.45, 0.3, 0.2, 0.1]
    ends = [0.1, 0.1, 0.8, 0.2, 0.1, 0.7]
    tags = cse_decode(starts, ends, entity_probs("PPPLLL"), CSE_CLASSES)
    assert tags == ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "I-LOC"]


def test_cse_end_before_any_start_takes_the_best_start_from_token_0():
    tags = cse_decode([0.2, 0.4, 0.1, 0.1], [0.1, 0.2, 0.9, 0.1], entity_probs("PPPP"), CSE_CLASSES)
    assert tags == ["O", "B-PER", "I-PER", "O"]


def test_cse_start_without_end_takes_the_best_end_to_the_last_token():
    tags = cse_decode([0.1, 0.9, 0.1, 0.1], [0.1, 0.2, 0.4, 0.3], entity_probs("LLLL"), CSE_CLASSES)
    assert tags == ["O", "B-LOC", "I-LOC", "O"]


def test_cse_one_token_entities():
    assert cse_decode([0.9, 0.1], [0.9, 0.1], entity_probs("PP"), CSE_CLASSES) == ["B-PER", "O"]
    tags = cse_decode([0.9, 0.9], [0.9, 0.9], entity_probs("PL"), CSE_CLASSES)
    assert tags == ["B-PER", "B-LOC"]


def test_cse_markers_must_exceed_the_threshold():
    assert cse_decode([0.5], [0.5], entity_probs("P"), CSE_CLASSES) == ["O"]
    assert cse_decode([0.6], [0.6], entity_probs("P"), CSE_CLASSES, threshold=0.7) == ["O"]


def test_cse_class_is_the_argmax_of_probabilities_averaged_over_the_span():
    # Per token the argmax is PER, LOC, PER (start and majority: PER); averaged, LOC wins.
    classes = [[0.1, 0.6, 0.3], [0.1, 0.1, 0.8], [0.1, 0.5, 0.4], [0.0, 0.0, 1.0]]
    tags = cse_decode([0.9, 0.1, 0.1, 0.1], [0.1, 0.1, 0.9, 0.1], classes, CSE_CLASSES)
    assert tags == ["B-LOC", "I-LOC", "I-LOC", "O"]


def test_cse_span_whose_average_favours_o_takes_the_best_entity_class():
    classes = [[0.8, 0.05, 0.15], [0.8, 0.1, 0.1], [0.7, 0.05, 0.25]]
    assert cse_decode([0.9, 0.1, 0.1], [0.1, 0.9, 0.1], classes, CSE_CLASSES) == [
        "B-LOC",
        "I-LOC",
        "O",
    ]


def test_cse_round_trip_of_targets():
    rng = random.Random(3)
    for _ in range(500):
        tags = random_iob2(rng, rng.randint(0, 10))
        starts, ends, classes = cse_targets(tags)
        assert cse_decode(starts, ends, one_hot(classes, ["O"] + TYPES), ["O"] + TYPES) == tags


def test_cse_decoding_is_always_valid_iob2():
    rng = random.Random(4)
    classes = ["O"] + TYPES
    for _ in range(1000):
        length = rng.randint(1, 12)
        starts = [rng.random() for _ in range(length)]
        ends = [rng.random() for _ in range(length)]
        probs = [[rng.random() for _ in classes] for _ in range(length)]
        tags = cse_decode(starts, ends, probs, classes)
        assert len(tags) == length and count_iob2_violations(tags) == 0
        # Every marker lies in an entity: a start opens one, an end closes one.
        entities = strict_entities(tags)
        firsts = set(entities)
        lasts = {end - 1 for _, end in entities.values()}
        assert {i for i, p in enumerate(starts) if p > 0.5} <= firsts
        assert {i for i, p in enumerate(ends) if p > 0.5} <= lasts


def test_cse_decode_rejects_inconsistent_outputs():
    assert cse_decode([], [], [], CSE_CLASSES) == []
    with pytest.raises(ValueError, match="disagree"):
        cse_decode([0.9, 0.1], [0.9], entity_probs("PP"), CSE_CLASSES)
    with pytest.raises(ValueError, match="disagree"):
        cse_decode([0.9], [0.9], [[0.5, 0.5]], CSE_CLASSES)
    with pytest.raises(ValueError, match="no entity class"):
        cse_decode([0.9], [0.9], [[1.0]], ["O"])


# ----------------------------------------------------------------------------- entity F1

CORPORA = [
    (
        [["B-PER", "I-PER", "O", "B-LOC"], ["O", "B-ORG"], ["B-LOC", "I-LOC", "I-LOC"]],
        [["B-PER", "I-PER", "O", "B-ORG"], ["O", "B-ORG"], ["B-LOC", "I-LOC", "O"]],
    ),
    (  # predictions with IOB2 violations: the two seqeval modes disagree
        [["B-PER", "O", "B-LOC", "I-LOC"], ["B-ORG", "I-ORG"], ["O"]],
        [["I-PER", "O", "B-LOC", "I-ORG"], ["B-ORG", "I-ORG"], ["I-LOC"]],
    ),
    ([["O", "O"], ["O"]], [["O", "O"], ["O"]]),
    ([["O", "B-PER"]], [["O", "O"]]),
]


@pytest.mark.parametrize("gold, pred", CORPORA)
def test_summed_counts_give_seqeval_default_micro_scores(gold, pred):
    scores = entity_f1(gold, pred)
    assert scores["f1"] == f1_score(gold, pred)
    assert scores["precision"] == precision_score(gold, pred)
    assert scores["recall"] == recall_score(gold, pred)


@pytest.mark.parametrize("gold, pred", CORPORA)
def test_summed_counts_give_seqeval_strict_micro_scores(gold, pred):
    scores = entity_f1(gold, pred, strict=True)
    assert scores["f1"] == f1_score(gold, pred, mode="strict", scheme=IOB2)
    assert scores["precision"] == precision_score(gold, pred, mode="strict", scheme=IOB2)
    assert scores["recall"] == recall_score(gold, pred, mode="strict", scheme=IOB2)


def test_entity_counts_per_sentence():
    gold, pred = CORPORA[1]
    # Default mode: the leading I-PER is the entity PER (0, 0); strict mode: no entity.
    assert [entity_counts(g, p) for g, p in zip(gold, pred)] == [(1, 3, 2), (1, 1, 1), (0, 1, 0)]
    strict = [entity_counts(g, p, strict=True) for g, p in zip(gold, pred)]
    assert strict == [(0, 1, 2), (1, 1, 1), (0, 0, 0)]
    assert entity_f1(gold, pred) == {
        "precision": 2 / 5,
        "recall": 2 / 3,
        "f1": 2 * (2 / 5) * (2 / 3) / (2 / 5 + 2 / 3),
        "true_positives": 2,
        "predicted": 5,
        "gold": 3,
    }


def test_summed_counts_match_seqeval_on_random_corpora():
    rng = random.Random(5)
    for _ in range(200):
        sizes = [rng.randint(1, 8) for _ in range(rng.randint(1, 5))]
        gold = [random_iob2(rng, size) for size in sizes]
        pred = [random_tags(rng, size) for size in sizes]
        assert entity_f1(gold, pred)["f1"] == f1_score(gold, pred)
        strict = f1_score(gold, pred, mode="strict", scheme=IOB2)
        assert entity_f1(gold, pred, strict=True)["f1"] == strict


def test_entity_counts_reject_sentences_of_different_lengths():
    with pytest.raises(ValueError, match="2 gold tags but 1 predicted"):
        entity_counts(["O", "B-PER"], ["O"])
    with pytest.raises(ValueError, match="'X'"):
        entity_counts(["O"], ["X"])


@pytest.mark.parametrize(
    "tags",
    [
        ["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-LOC"],  # IOB2
        ["I-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-LOC"],  # IOB1
        ["B-PER", "E-PER", "O", "S-LOC", "B-LOC", "E-LOC"],  # IOBES
        ["B-PER", "L-PER", "O", "U-LOC", "B-LOC", "L-LOC"],  # BILOU
    ],
)
def test_to_iob2_keeps_the_entities_of_every_scheme(tags):
    assert to_iob2(tags) == ["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-LOC"]


def test_to_iob2_converts_a_long_iobes_entity_and_rejects_other_tags():
    assert to_iob2(["B-ORG", "I-ORG", "E-ORG", "S-PER"]) == ["B-ORG", "I-ORG", "I-ORG", "B-PER"]
    with pytest.raises(ValueError, match="'X-PER' is not IOB"):
        to_iob2(["B-PER", "X-PER"])


@pytest.mark.parametrize(
    "tag, expected",
    [
        ("O", True),
        ("B-PER", True),
        ("E-LOC", True),
        ("U-ORG", True),
        ("X-PER", False),
        ("PER", False),
    ],
)
def test_is_iob_tag(tag, expected):
    assert is_iob_tag(tag) is expected
