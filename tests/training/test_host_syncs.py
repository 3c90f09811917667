"""No host synchronisation in a training or decoding step of the project's models and criteria. On
the CPU with `HostSyncRecorder`: every ATen call that would make the host wait for a GPU (`.item()`,
`int()`, `bool()`, `nonzero`, `unique`, mask indexing) is recorded with the code that made it. On a
GPU (tests marked `cuda`) with CUDA's own sync debug mode.

Allowed, as fairseq's own code that the project subclasses rather than forks: its Transformer
encoder and decoder test for padding with `if mask.any()` (one sync per forward, in stock
`transformer` and `roberta` too), and its sinusoidal position table reads the batch shape from
a CPU tensor (`shape_as_tensor`, for ONNX export; no GPU sync, but a CPU run cannot tell).
"""

import warnings
from types import SimpleNamespace

import pytest
import torch
from conftest import requires_cuda
from fairseq import utils
from fairseq.criterions.label_smoothed_cross_entropy import LabelSmoothedCrossEntropyCriterion
from training_steps import (
    mlm_batch,
    sentence_prediction_and_qa_steps,
    token_classification_step,
    translation_batch,
)

import fairseq_struct.plugin  # noqa: F401  (registers the models)
from fairseq_struct.criterions.masked_lm_struct import MaskedLMStructCriterion
from fairseq_struct.models.bert_elmo import DictionaryCharacterEmbedding
from fairseq_struct.modules.token_classification_heads import HEAD_TYPES
from fairseq_struct.tasks.masked_lm_struct import SENTENCE_PAIR_HEAD
from fairseq_struct.testing.build_from_arch import build_model_from_arch, joined_dictionary
from fairseq_struct.testing.host_sync import HostSyncRecorder

FAIRSEQ_SITES = (
    ("fairseq/models/transformer/transformer_encoder.py", "forward_scriptable"),
    ("fairseq/models/transformer/transformer_decoder.py", "extract_features_scriptable"),
    ("fairseq/modules/sinusoidal_positional_embedding.py", "forward"),
)


DEVICES = ["cpu", pytest.param("cuda", marks=requires_cuda)]


# torch warns, when the debug mode is switched on, that it "is a prototype feature and does not
# yet detect all synchronizing operations": a notice, not a synchronisation.
_PROTOTYPE_NOTICE = "debug mode is a prototype feature"


def assert_no_host_sync(step, device: str = "cpu") -> None:
    if device == "cpu":
        with HostSyncRecorder() as recorder:
            step()
        syncs = recorder.syncs_outside(FAIRSEQ_SITES)
        assert not syncs, HostSyncRecorder.report(syncs)
        return
    # CUDA reports every synchronising call as a warning from the Python line that made it.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            step()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    syncs = [
        warning
        for warning in caught
        if "synchroniz" in str(warning.message)
        and _PROTOTYPE_NOTICE not in str(warning.message)
        and not any(warning.filename.endswith(file) for file, _ in FAIRSEQ_SITES)
    ]
    assert not syncs, "\n".join(f"{w.filename}:{w.lineno}: {w.message}" for w in syncs)


@pytest.mark.parametrize("device", DEVICES)
def test_the_check_fails_on_a_real_synchronisation_and_only_then(device):
    values = torch.arange(6.0, device=device)
    assert_no_host_sync(lambda: values.cumsum(0).mul_(2), device)
    with pytest.raises(AssertionError, match="(?i)synchroniz|_local_scalar_dense"):
        assert_no_host_sync(lambda: values.sum().item(), device)


def on_device(sample, device: str):
    return utils.move_to_cuda(sample) if device == "cuda" else sample


# ------------------------------------------------------------------------------ translation


@pytest.mark.parametrize(
    "arch,overrides",
    [
        ("tp_transformer_tiny", {}),
        ("transformer_relpos_tiny", {}),
        ("tp_transformer_tiny", {"max_relative_positions": 0}),  # the fused (SDPA) path
    ],
)
@pytest.mark.parametrize("device", DEVICES)
def test_translation_training_step_has_no_host_sync(arch, overrides, device):
    dictionary = joined_dictionary(40)
    model = build_model_from_arch(arch, dictionary, seed=0, **overrides).train().to(device)
    task = SimpleNamespace(target_dictionary=dictionary)
    criterion = LabelSmoothedCrossEntropyCriterion(task, sentence_avg=False, label_smoothing=0.1)
    sample = on_device(translation_batch(dictionary), device)

    def step():
        loss, _, _ = criterion(model, sample)
        loss.backward()

    assert_no_host_sync(step, device)


@pytest.mark.parametrize("beam", [1, 2])
@pytest.mark.parametrize("device", DEVICES)
def test_incremental_decoding_steps_have_no_host_sync(beam, device):
    """Encoder once, then decoder steps with the incremental state, reordered between steps
    as beam search does (cross-attention caches one row per sentence when beam > 1)."""
    dictionary = joined_dictionary(40)
    model = build_model_from_arch("tp_transformer_tiny", dictionary, seed=0).eval().to(device)
    model.set_beam_size(beam)
    sample = on_device(translation_batch(dictionary), device)
    src = sample["net_input"]["src_tokens"].repeat_interleave(beam, dim=0)
    lengths = sample["net_input"]["src_lengths"].repeat_interleave(beam, dim=0)
    rows = src.size(0)

    def decode():
        with torch.no_grad():
            encoder_out = model.encoder(src, src_lengths=lengths)
            state = {}
            tokens = torch.full((rows, 1), dictionary.eos(), device=device)
            for _ in range(3):
                logits, _ = model.decoder(tokens, encoder_out=encoder_out, incremental_state=state)
                tokens = torch.cat([tokens, logits[:, -1:].argmax(-1)], dim=1)
                order = torch.arange(rows, device=device).view(-1, beam).flip(1).reshape(-1)
                model.decoder.reorder_incremental_state_scripting(state, order)
                tokens = tokens.index_select(0, order)

    assert_no_host_sync(decode, device)


# ------------------------------------------------------------------------------- masked LM


@pytest.mark.parametrize(
    "overrides,sentence_objective",
    [
        ({"position_embedding": "2d"}, "none"),
        ({"position_embedding": "1d"}, "sop"),
        ({"position_embedding": "none", "relative_positions": 4}, "none"),
        ({"whole_word_attention": True}, "nsp"),
    ],
)
@pytest.mark.parametrize("device", DEVICES)
def test_masked_lm_training_step_has_no_host_sync(
    tiny_mlm_data, overrides, sentence_objective, device
):
    task, sample = mlm_batch(tiny_mlm_data["pieces"], sentence_objective=sentence_objective)
    assert sample["masked_positions"].numel() > 0
    model = build_model_from_arch("bert2d_tiny", task.source_dictionary, seed=0, **overrides)
    if sentence_objective != "none":
        model.register_classification_head(SENTENCE_PAIR_HEAD, num_classes=2)
    criterion = MaskedLMStructCriterion(task)
    model.train().to(device)
    sample = on_device(sample, device)

    def step():
        loss, _, _ = criterion(model, sample)
        loss.backward()

    assert_no_host_sync(step, device)


@pytest.mark.parametrize("device", DEVICES)
def test_bert_elmo_training_step_has_no_host_sync_on_its_gpu_path(
    tiny_mlm_data, monkeypatch, device
):
    """The character embedding deduplicates words only on a CPU (free there); on the CPU the
    path a GPU takes is forced."""
    if device == "cpu":
        monkeypatch.setattr(
            DictionaryCharacterEmbedding,
            "embeds_distinct_words",
            staticmethod(lambda tokens: False),
        )
    task, sample = mlm_batch(tiny_mlm_data["words"], tokens_are_words=True)
    model = build_model_from_arch("bert_elmo_tiny", task.source_dictionary, seed=0)
    model.train().to(device)
    criterion = MaskedLMStructCriterion(task)
    sample = on_device(sample, device)

    def step():
        loss, _, _ = criterion(model, sample)
        loss.backward()

    assert_no_host_sync(step, device)


# ------------------------------------------------------------------------------ fine-tuning


@pytest.mark.parametrize("head_type", HEAD_TYPES)
def test_token_classification_training_step_has_no_host_sync(head_type):
    model, criterion, sample = token_classification_step(head_type)
    model.train()

    def step():
        loss, _, _ = criterion(model, sample)
        loss.backward()

    assert_no_host_sync(step)


def test_sentence_prediction_and_qa_training_steps_have_no_host_sync():
    model, steps = sentence_prediction_and_qa_steps()
    model.train()

    def step():
        for criterion, sample in steps:
            loss, _, _ = criterion(model, sample)
            loss.backward()

    assert_no_host_sync(step)


def test_the_recorder_finds_a_sync_added_back():
    """The checks above fail when a model syncs: a step that reads a count back is caught."""
    dictionary = joined_dictionary(40)
    model = build_model_from_arch("tp_transformer_tiny", dictionary, seed=0).train()
    sample = translation_batch(dictionary)

    def step():
        out, _ = model(**sample["net_input"])
        int(sample["target"].ne(dictionary.pad()).sum())
        out.sum().backward()

    with pytest.raises(AssertionError, match="_local_scalar_dense"):
        assert_no_host_sync(step)
