"""Token-classification heads: word gathering, CSE targets, losses and decoding."""

import pytest
import torch

from fairseq_struct.modules.token_classification_heads import TokenClassificationHead, gather_words
from fairseq_struct.tagging.iob import cse_targets

LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]


def test_gather_words_left_aligns_the_first_units_of_each_row():
    outputs = torch.arange(12, dtype=torch.float).view(2, 6, 1)
    word_mask = torch.tensor([[0, 1, 0, 1, 1, 0], [0, 0, 1, 0, 0, 0]], dtype=torch.bool)
    words, mask = gather_words(outputs, word_mask)
    assert mask.tolist() == [[True, True, True, False, False, False], [True] + [False] * 5]
    assert words[0, :3, 0].tolist() == [1.0, 3.0, 4.0]
    assert words[1, 0, 0].item() == 8.0


@pytest.mark.parametrize(
    "tags",
    [
        ["B-PER", "I-PER", "O", "B-LOC"],
        ["B-LOC", "B-LOC", "I-LOC", "I-LOC"],
        ["O", "O"],
        ["B-PER", "I-PER", "B-PER", "O", "B-LOC", "I-LOC"],
    ],
)
def test_cse_targets_of_the_head_equal_those_of_the_tags(tags):
    head = TokenClassificationHead(8, 8, LABELS, "cse")
    width = 7
    labels = torch.full((1, width), -1)
    labels[0, : len(tags)] = torch.tensor([LABELS.index(tag) for tag in tags])
    mask = labels >= 0
    starts, ends, classes = head.cse_targets(labels, mask)
    expected_starts, expected_ends, expected_classes = cse_targets(tags)
    n = len(tags)
    assert starts[0, :n].long().tolist() == expected_starts
    assert ends[0, :n].long().tolist() == expected_ends
    assert [head.classes[i] for i in classes[0, :n].tolist()] == expected_classes
    assert not starts[0, n:].any() and not ends[0, n:].any()


def test_cse_head_outputs_start_end_and_classes_without_prefixes():
    head = TokenClassificationHead(8, 8, LABELS, "cse")
    assert head.classes == ["O", "LOC", "PER"]
    assert head.out_proj.out_features == 2 + 3


def test_cse_head_decodes_its_targets_back_into_the_tags():
    head = TokenClassificationHead(4, 4, LABELS, "cse")
    tags = ["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-LOC"]
    starts, ends, classes = cse_targets(tags)
    words = torch.full((1, len(tags), 5), -20.0)
    for i, (s, e, c) in enumerate(zip(starts, ends, classes)):
        words[0, i, 0] = 20.0 if s else -20.0
        words[0, i, 1] = 20.0 if e else -20.0
        words[0, i, 2 + head.classes.index(c)] = 20.0
    assert head.decode(words, torch.ones(1, len(tags), dtype=torch.bool)) == [tags]


def test_softmax_loss_is_the_cross_entropy_of_the_real_words_only():
    head = TokenClassificationHead(4, 4, LABELS, "softmax")
    words = torch.randn(2, 3, len(LABELS))
    labels = torch.tensor([[1, 2, -1], [0, -1, -1]])
    mask = labels >= 0
    expected = sum(
        -torch.log_softmax(words[b, t], -1)[labels[b, t]] for b, t in [(0, 0), (0, 1), (1, 0)]
    )
    assert head.word_loss(words, labels, mask).item() == pytest.approx(expected.item(), rel=1e-6)
    assert head.decode(words, mask) == [
        [LABELS[i] for i in words[0, :2].argmax(-1).tolist()],
        [LABELS[words[1, 0].argmax().item()]],
    ]


@pytest.mark.parametrize("head_type", ["lcrf", "lcrf_ner"])
def test_crf_heads_use_the_crf_likelihood_and_viterbi(head_type):
    torch.manual_seed(0)
    head = TokenClassificationHead(4, 4, LABELS, head_type)
    words = torch.randn(2, 4, len(LABELS))
    labels = torch.tensor([[1, 2, 0, 3], [3, 4, -1, -1]])
    mask = labels >= 0
    expected = -head.crf.log_likelihood(words, labels.clamp(min=0), mask).sum()
    assert torch.allclose(head.word_loss(words, labels, mask), expected)
    paths = head.crf.viterbi_decode(words, mask).tolist()
    assert head.decode(words, mask) == [
        [LABELS[i] for i in paths[0]],
        [LABELS[i] for i in paths[1][:2]],
    ]
    assert (head_type == "lcrf_ner") == hasattr(head.crf, "forbidden_penalty")


def test_heads_that_need_iob_tags_refuse_other_labels():
    with pytest.raises(ValueError, match="NOUN"):
        TokenClassificationHead(4, 4, ["NOUN", "VERB"], "lcrf_ner")
    TokenClassificationHead(4, 4, ["NOUN", "VERB"], "lcrf")  # a CRF over POS tags is fine


def test_one_layer_head_is_berts_dropout_then_one_linear_layer():
    """--head-layers 1: BertForTokenClassification's classifier, initialised as BERT's (normal
    with std 0.02, zero bias); dropout on the encoder's outputs only."""
    torch.manual_seed(0)
    head = TokenClassificationHead(256, 256, LABELS * 20, layers=1, pooler_dropout=0.1)
    assert [name for name, _ in head.named_parameters()] == ["out_proj.weight", "out_proj.bias"]
    assert head.out_proj.weight.shape == (100, 256)
    assert abs(float(head.out_proj.weight.detach().std()) - 0.02) < 0.001
    assert not head.out_proj.bias.any()
    features = torch.randn(2, 5, 256)
    expected = torch.nn.functional.linear(features, head.out_proj.weight, head.out_proj.bias)
    assert torch.equal(head.eval()(features), expected)
    head.train()
    torch.manual_seed(1)
    dropped = torch.nn.functional.dropout(features, 0.1, training=True)
    torch.manual_seed(1)
    assert torch.equal(head(features), head.out_proj(dropped))


def test_head_layers_are_one_or_two():
    with pytest.raises(ValueError, match=r"head layers must be one of \(1, 2\), not 3"):
        TokenClassificationHead(8, 8, LABELS, layers=3)
