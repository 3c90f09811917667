"""Every model, criterion and module of the project on a device other than the CPU, without a GPU:
`fairseq_struct.testing.other_device` emulates one on the CPU, so a tensor made on the CPU by
mistake (a bare `torch.arange`, a `torch.zeros` without `device=`) fails here as it would on a
user's GPU. The steps are those of the host-synchronisation test (`training_steps`); each runs twice
from the same seed, on the CPU and on the emulated device, and must give the same loss, logging
outputs and gradients (the emulated device computes on the CPU, so a difference means that the code
took another path, not rounding)."""

from types import SimpleNamespace
from typing import Any, Callable, Dict

import pytest
import torch
from fairseq.criterions.label_smoothed_cross_entropy import LabelSmoothedCrossEntropyCriterion
from fairseq.sequence_generator import SequenceGenerator
from training_steps import (
    mlm_batch,
    sentence_prediction_and_qa_steps,
    token_classification_step,
    translation_batch,
)

import fairseq_struct.plugin  # noqa: F401  (registers the models)
from fairseq_struct.criterions.masked_lm_struct import MaskedLMStructCriterion
from fairseq_struct.modules.token_classification_heads import HEAD_TYPES
from fairseq_struct.tasks.masked_lm_struct import SENTENCE_PAIR_HEAD
from fairseq_struct.testing.build_from_arch import build_model_from_arch, joined_dictionary
from fairseq_struct.testing.other_device import (
    OTHER_DEVICE,
    OnOtherDevice,
    OtherDevice,
    module_to_other_device,
    move_to_other_device,
)


def _plain(value: Any) -> Any:
    """A value of a logging output as a CPU number or tensor, wherever it was computed."""
    if isinstance(value, OnOtherDevice):
        return value.cpu_values.clone()
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    return value


def _run(make: Callable[[], tuple], train: bool, on_other_device: bool) -> Dict[str, Any]:
    """`make()` gives (model, [(criterion, sample), ...]); one step of each criterion from the
    same seed, returning the losses, logging outputs and parameter gradients on the CPU."""
    model, steps = make()
    model.train(train)
    outcome: Dict[str, Any] = {"losses": [], "logs": []}

    def step() -> None:
        torch.manual_seed(5)
        for criterion, sample in steps:
            if on_other_device:
                sample = move_to_other_device(sample)
            loss, _, log = criterion(model, sample)
            if train:
                loss.backward()
            outcome["losses"].append(_plain(loss.detach()))
            outcome["logs"].append({key: _plain(value) for key, value in log.items()})
        outcome["grads"] = {
            name: _plain(parameter.grad)
            for name, parameter in model.named_parameters()
            if parameter.grad is not None
        }

    if on_other_device:
        with OtherDevice():
            module_to_other_device(model)
            assert all(p.device == OTHER_DEVICE for p in model.parameters())
            step()
    else:
        step()
    return outcome


def assert_same_step_on_other_device(make: Callable[[], tuple], train: bool = True) -> None:
    on_cpu = _run(make, train, on_other_device=False)
    elsewhere = _run(make, train, on_other_device=True)
    torch.testing.assert_close(elsewhere["losses"], on_cpu["losses"])
    for log, expected in zip(elsewhere["logs"], on_cpu["logs"], strict=True):
        assert log.keys() == expected.keys()
        for key, value in log.items():
            if key == "answers":  # validation answers: (question, score, text, gold answers)
                assert [(q, t, g) for q, _, t, g in value] == [
                    (q, t, g) for q, _, t, g in expected[key]
                ]
                assert [a[1] for a in value] == pytest.approx([a[1] for a in expected[key]])
            else:
                torch.testing.assert_close(value, expected[key], msg=key)
    assert elsewhere["grads"].keys() == on_cpu["grads"].keys()
    assert bool(on_cpu["grads"]) == train
    torch.testing.assert_close(elsewhere["grads"], on_cpu["grads"])


# ------------------------------------------------------------------------------ translation


TRANSLATION_MODELS = [
    ("tp_transformer_tiny", {}),
    ("tp_transformer_tiny", {"role_binding": "plain"}),
    ("tp_transformer_tiny", {"max_relative_positions": 0}),  # the fused (SDPA) path
    ("tp_transformer_tiny", {"absolute_positions": True}),
    ("transformer_relpos_tiny", {}),
]


@pytest.mark.parametrize("arch,overrides", TRANSLATION_MODELS)
@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
def test_translation_step_on_another_device(arch, overrides, train):
    def make():
        dictionary = joined_dictionary(40)
        model = build_model_from_arch(arch, dictionary, seed=0, **overrides)
        task = SimpleNamespace(target_dictionary=dictionary)
        criterion = LabelSmoothedCrossEntropyCriterion(
            task, sentence_avg=False, label_smoothing=0.1
        )
        return model, [(criterion, translation_batch(dictionary))]

    assert_same_step_on_other_device(make, train)


@pytest.mark.parametrize("arch", ["tp_transformer_tiny", "transformer_relpos_tiny"])
def test_beam_search_on_another_device(arch):
    """fairseq's SequenceGenerator, beam 3: incremental decoding, the cross-attention cache
    kept once per sentence, reordering between steps."""
    dictionary = joined_dictionary(40)
    sample = translation_batch(dictionary)
    hypotheses = []
    for on_other_device in (False, True):
        model = build_model_from_arch(arch, dictionary, seed=0).eval()
        generator = SequenceGenerator([model], dictionary, beam_size=3, max_len_b=8)
        with torch.no_grad():
            if on_other_device:
                with OtherDevice():
                    module_to_other_device(model)
                    found = generator.generate([model], move_to_other_device(sample))
                    assert found[0][0]["tokens"].device == OTHER_DEVICE
                    found = [[_plain(h["tokens"]) for h in beam] for beam in found]
            else:
                found = generator.generate([model], sample)
                found = [[h["tokens"] for h in beam] for beam in found]
        hypotheses.append(found)
    torch.testing.assert_close(hypotheses[1], hypotheses[0])


# ------------------------------------------------------------------------------- masked LM


MASKED_LM_MODELS = [
    ("bert2d_tiny", {"position_embedding": "2d"}, "none"),
    ("bert2d_tiny", {"position_embedding": "2d", "subword_id_strategy": "paper"}, "none"),
    (
        "bert2d_tiny",
        {"position_embedding": "2d", "subword_id_strategy": "leftover_as_last"},
        "none",
    ),
    ("bert2d_tiny", {"position_embedding": "1d"}, "sop"),
    ("bert2d_tiny", {"position_embedding": "none", "relative_positions": 4}, "none"),
    ("bert2d_tiny", {"whole_word_attention": True}, "nsp"),
    ("bert2d_tiny", {"whole_word_attention": True, "relative_positions": 4}, "none"),
    ("bert_elmo_tiny", {}, "none"),
]


@pytest.mark.parametrize("arch,overrides,sentence_objective", MASKED_LM_MODELS)
@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
def test_masked_lm_step_on_another_device(
    tiny_mlm_data, arch, overrides, sentence_objective, train
):
    """The character CNN of bert_elmo takes its accelerator path here (every token, no
    deduplication); its embeddings must equal the CPU path's."""
    words = arch.startswith("bert_elmo")
    corpus = tiny_mlm_data["words" if words else "pieces"]

    def make():
        task, sample = mlm_batch(
            corpus, tokens_are_words=words, sentence_objective=sentence_objective
        )
        model = build_model_from_arch(arch, task.source_dictionary, seed=0, **overrides)
        if sentence_objective != "none":
            model.register_classification_head(SENTENCE_PAIR_HEAD, num_classes=2)
        return model, [(MaskedLMStructCriterion(task), sample)]

    assert_same_step_on_other_device(make, train)


# ------------------------------------------------------------------------------ fine-tuning


@pytest.mark.parametrize("head_type", HEAD_TYPES)
@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
def test_token_classification_step_on_another_device(head_type, train):
    """In eval mode the criterion decodes (argmax, CSE, Viterbi) and applies Entity-Fix."""

    def make():
        model, criterion, sample = token_classification_step(head_type, entity_fix=not train)
        return model, [(criterion, sample)]

    assert_same_step_on_other_device(make, train)


@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
def test_sentence_prediction_and_qa_steps_on_another_device(train):
    assert_same_step_on_other_device(sentence_prediction_and_qa_steps, train)
