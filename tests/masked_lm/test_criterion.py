"""The loss terms of the `masked_lm_struct` criterion against their definitions (docs/pretraining.md "NSP /
SOP", the criterion's docstring): the MLM term is the cross-entropy summed over the masked
tokens; with a sentence objective the loss is the sum of the two means (MLM per masked token,
NSP/SOP per pair), returned as a sum over `sample_size` = masked tokens, so the pair term is
weighted by masked tokens / pairs; a batch with nothing masked weighs nothing without pairs and
its pairs alone with them; the unigram baseline always predicts the most frequent non-special
symbol of the dictionary's (training) counts.

The references are computed another way than the criterion computes them: the full forward
pass over every position, the masked tokens found as the non-padding targets (not from
`masked_positions`), and the pair logits through fairseq's `classification_head_name`."""

import math

import pytest
import torch
import torch.nn.functional as F
from conftest import tiny_mlm_task
from fairseq import metrics
from fairseq.data import Dictionary

import fairseq_struct.plugin  # noqa: F401  (registers the models)
from fairseq_struct.criterions.masked_lm_struct import MaskedLMStructCriterion
from fairseq_struct.tasks.masked_lm_struct import SENTENCE_PAIR_HEAD
from fairseq_struct.testing.build_from_arch import build_model_from_arch


def _batch(task, indices) -> dict:
    dataset = task.dataset("valid")
    return dataset.collater([dataset[i] for i in indices])


def _model(task, arch: str = "bert2d_tiny"):
    model = build_model_from_arch(arch, task.source_dictionary, seed=0)
    if task.cfg.sentence_objective != "none":
        model.register_classification_head(SENTENCE_PAIR_HEAD, num_classes=2)
    return model.eval()  # no dropout: the reference pass sees the same network


def _reference_mlm_sum(model, sample, pad: int) -> float:
    """Cross-entropy summed over the non-padding targets, from logits at every position."""
    with torch.no_grad():
        logits, _ = model(**sample["net_input"])
    target = sample["target"]
    masked = target.ne(pad)
    targets = target[masked]
    output_targets = getattr(model.encoder, "output_targets", None)
    if output_targets is not None:
        targets = output_targets(targets)
    return F.cross_entropy(logits[masked].double(), targets, reduction="sum").item()


def _reference_pair_sum(model, sample) -> float:
    with torch.no_grad():
        logits, _ = model(**sample["net_input"], classification_head_name=SENTENCE_PAIR_HEAD)
    return F.cross_entropy(logits.double(), sample["sentence_target"], reduction="sum").item()


def _logged(logging_outputs) -> dict:
    with metrics.aggregate(new_root=True) as aggregated:
        MaskedLMStructCriterion.reduce_metrics(logging_outputs)
        return aggregated.get_smoothed_values()


def _indices(task, masked: bool, count: int) -> list:
    """Dataset items with (or without) at least one masked token."""
    dataset, pad = task.dataset("valid"), task.source_dictionary.pad()
    found = [i for i in range(len(dataset)) if bool(dataset[i]["target"].ne(pad).any()) == masked]
    assert len(found) >= count, (masked, len(found))
    return found[:count]


@pytest.mark.parametrize("units, arch", [("pieces", "bert2d_tiny"), ("words", "bert_elmo_tiny")])
def test_mlm_loss_is_the_cross_entropy_summed_over_the_masked_tokens(tiny_mlm_data, units, arch):
    task = tiny_mlm_task(tiny_mlm_data[units], tokens_are_words=units == "words")
    sample = _batch(task, _indices(task, masked=True, count=8))
    model = _model(task, arch)
    pad = task.source_dictionary.pad()
    num_masked = int(sample["target"].ne(pad).sum())
    assert num_masked >= 8

    loss, sample_size, log = MaskedLMStructCriterion(task)(model, sample)

    expected = _reference_mlm_sum(model, sample, pad)
    assert sample_size == log["num_masked"] == num_masked
    assert loss.item() == pytest.approx(expected, rel=1e-5)
    assert log["mlm_loss"].item() == pytest.approx(expected, rel=1e-5)
    assert "sentence_loss" not in log
    logged = _logged([log])
    # Logged per masked token, in bits (rounded to 3 decimals).
    assert logged["loss"] == pytest.approx(expected / num_masked / math.log(2), abs=1e-3)
    assert logged["mlm_loss"] == pytest.approx(expected / num_masked / math.log(2), abs=1e-3)


@pytest.mark.parametrize("objective", ["nsp", "sop"])
def test_sentence_objective_adds_its_mean_to_the_mlm_mean(tiny_mlm_data, objective):
    task = tiny_mlm_task(tiny_mlm_data["pieces"], sentence_objective=objective)
    sample = _batch(task, _indices(task, masked=True, count=8))
    model = _model(task)
    pad = task.source_dictionary.pad()
    num_masked, pairs = int(sample["target"].ne(pad).sum()), sample["nsentences"]
    assert pairs == 8 and num_masked > pairs  # so a wrong weight shows
    assert set(sample["sentence_target"].tolist()) == {0, 1}

    loss, sample_size, log = MaskedLMStructCriterion(task)(model, sample)

    mlm_sum = _reference_mlm_sum(model, sample, pad)
    pair_sum = _reference_pair_sum(model, sample)
    assert sample_size == num_masked
    # fairseq divides the gradient by sample_size: what it minimises is the sum of the means.
    assert loss.item() / sample_size == pytest.approx(mlm_sum / num_masked + pair_sum / pairs, 1e-5)
    assert log["mlm_loss"].item() == pytest.approx(mlm_sum, rel=1e-5)
    assert log["sentence_loss"].item() == pytest.approx(pair_sum, rel=1e-5)
    with torch.no_grad():
        pair_logits, _ = model(**sample["net_input"], classification_head_name=SENTENCE_PAIR_HEAD)
    correct = int(pair_logits.argmax(-1).eq(sample["sentence_target"]).sum())
    assert int(log["sentence_correct"]) == correct
    logged = _logged([log])
    means = mlm_sum / num_masked + pair_sum / pairs
    assert logged["loss"] == pytest.approx(means / math.log(2), abs=1e-3)
    assert logged["sentence_loss"] == pytest.approx(pair_sum / pairs / math.log(2), abs=1e-3)
    assert logged["sentence_accuracy"] == round(100 * correct / pairs, 2)


def test_batch_without_masked_tokens_weighs_nothing(tiny_mlm_data):
    """With --sample-break-mode eos the empty lines between documents are samples of their own
    (<s> </s>): nothing to mask. Such a batch has sample size 0, a zero loss and zero
    gradients, and logs zeros instead of dividing by zero."""
    task = tiny_mlm_task(tiny_mlm_data["pieces"])
    sample = _batch(task, _indices(task, masked=False, count=3))
    assert sample["masked_positions"].numel() == 0
    model = _model(task).train()

    loss, sample_size, log = MaskedLMStructCriterion(task)(model, sample)

    assert sample_size == 0 and log["num_masked"] == 0
    assert loss.item() == 0.0
    loss.backward()
    gradients = [p.grad for p in model.parameters() if p.grad is not None]
    assert gradients and all(bool(g.eq(0).all()) for g in gradients)
    logged = _logged([log])
    assert (logged["loss"], logged["mlm_loss"], logged["mlm_accuracy"]) == (0.0, 0.0, 0.0)
    assert logged["unigram_accuracy"] == 0.0


def test_pairs_without_masked_tokens_weigh_as_their_own_mean(tiny_mlm_data):
    """Sentence pairs with nothing masked still teach the pair head: sample size = pairs, so
    the gradient is that of the mean pair cross-entropy."""
    task = tiny_mlm_task(tiny_mlm_data["pieces"], sentence_objective="sop")
    sample = _batch(task, _indices(task, masked=True, count=4))
    pad = task.source_dictionary.pad()
    # The same pairs with their targets taken away: every token is an input, none a target.
    sample["target"] = torch.full_like(sample["target"], pad)
    sample["masked_positions"] = sample["masked_positions"][:0]
    model = _model(task)

    loss, sample_size, log = MaskedLMStructCriterion(task)(model, sample)

    pair_sum = _reference_pair_sum(model, sample)
    assert sample_size == sample["nsentences"] == 4
    assert loss.item() == pytest.approx(pair_sum, rel=1e-5)
    assert log["mlm_loss"].item() == 0.0
    logged = _logged([log])
    assert logged["loss"] == pytest.approx(pair_sum / 4 / math.log(2), abs=1e-3)
    assert logged["mlm_loss"] == 0.0


class _Predicting(torch.nn.Module):
    """A stand-in model whose LM head predicts one fixed symbol everywhere."""

    def __init__(self, vocab: int, symbol: int) -> None:
        super().__init__()
        self.encoder = self
        self.vocab, self.symbol = vocab, symbol

    def forward(self, src_tokens, features_only=True, **unused):
        return torch.zeros(*src_tokens.shape, 4, requires_grad=True), {}

    def output_layer(self, features):
        logits = torch.zeros(features.size(0), self.vocab)
        logits[:, self.symbol] = 10.0
        return logits + features.sum(-1, keepdim=True)


def test_unigram_baseline_is_the_most_frequent_non_special_symbol():
    """Counts where special symbols (</s>, <mask>, a padding-factor filler) outnumber every
    real piece: the baseline is the most frequent real piece, and its accuracy the share of
    targets that are that piece."""
    dictionary = Dictionary()
    for symbol, count in (("\u2581a", 50), ("\u2581b", 70), ("c", 60), ("madeupword0000", 900)):
        dictionary.add_symbol(symbol, n=count)
    dictionary.add_symbol("<mask>", n=1000)
    dictionary.count[dictionary.eos()] = 5000
    task = type("Task", (), {"source_dictionary": dictionary})()
    criterion = MaskedLMStructCriterion(task)
    b, c = dictionary.index("\u2581b"), dictionary.index("c")
    assert criterion.most_frequent_symbol == b

    target = torch.full((2, 5), dictionary.pad())
    target[0, :4] = torch.tensor([b, c, b, dictionary.index("\u2581a")])
    target[1, 1:4] = torch.tensor([b, c, c])
    sample = {
        "net_input": {"src_tokens": torch.full((2, 5), dictionary.index("<mask>"))},
        "target": target,
        "masked_positions": target.reshape(-1).ne(dictionary.pad()).nonzero().squeeze(1),
        "ntokens": 10,
        "nsentences": 2,
    }
    # The stand-in predicts c everywhere: 3 of the 7 targets; the baseline (b) gets 3 as well.
    _, sample_size, log = criterion(_Predicting(len(dictionary), c), sample)
    assert (sample_size, int(log["unigram_correct"]), int(log["mlm_correct"])) == (7, 3, 3)
    target[1, 1:4] = torch.tensor([b, b, c])
    _, _, log = criterion(_Predicting(len(dictionary), c), sample)
    assert (int(log["unigram_correct"]), int(log["mlm_correct"])) == (4, 2)
    logged = _logged([log])
    assert logged["unigram_accuracy"] == round(100 * 4 / 7, 2)
    assert logged["mlm_accuracy"] == round(100 * 2 / 7, 2)


def test_unigram_baseline_of_a_real_dictionary_reads_the_training_counts(tiny_mlm_data):
    """On the binarized data: the symbol with the highest count in dict.txt (what
    fairseq-preprocess counted on the training split), and the criterion's count of it among
    the targets."""
    entries = [
        line.rsplit(" ", 1)
        for line in (tiny_mlm_data["pieces"] / "dict.txt").read_text("utf-8").splitlines()
    ]
    top = max(entries, key=lambda entry: int(entry[1]))[0]
    task = tiny_mlm_task(tiny_mlm_data["pieces"])
    criterion = MaskedLMStructCriterion(task)
    assert task.source_dictionary[criterion.most_frequent_symbol] == top
    sample = _batch(task, _indices(task, masked=True, count=16))
    _, _, log = criterion(_model(task), sample)
    expected = int(sample["target"].eq(task.source_dictionary.index(top)).sum())
    assert expected > 0 and int(log["unigram_correct"]) == expected
