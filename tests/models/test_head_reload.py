"""A fine-tuned token head reloads with its model, whichever its shape (`--head-layers`).

fairseq's RoBERTa upgrade reads a `dense` layer in every head of a checkpoint, which
BertForTokenClassification's one-layer head lacks; StructRobertaModel takes such heads round
it, keeps the ones that match the model's and drops the others as fairseq drops a head.
"""

import logging
from pathlib import Path
from typing import Optional

import pytest
import torch
from fairseq.data import Dictionary

import fairseq_struct.plugin  # noqa: F401  (registers the models)
from fairseq_struct.modules.token_classification_heads import TokenClassificationHead
from fairseq_struct.testing.build_from_arch import build_model_from_arch

LABELS = ["O", "B-PER", "I-PER"]
HEAD = "tags"
HEAD_NAME = "token_classification_head"  # the task's default


def _dictionary() -> Dictionary:
    dictionary = Dictionary()
    for i in range(20):
        dictionary.add_symbol(("\u2581" if i % 2 else "") + f"p{i}")
    return dictionary


def _tagger(head_layers: Optional[int], seed: int, head_type: str = "softmax"):
    """A bert_tiny with a token head of `head_layers` layers (None: no head)."""
    model = build_model_from_arch("bert_tiny", _dictionary(), seed=seed)
    if head_layers is not None:
        model.classification_heads[HEAD] = TokenClassificationHead(
            128, 128, LABELS, head_type, layers=head_layers
        )
    return model


def _clone(state):
    return {key: value.clone() for key, value in state.items()}


@pytest.mark.parametrize("head_type", ["softmax", "lcrf"])
@pytest.mark.parametrize("layers", [1, 2])
def test_a_fine_tuned_head_reloads_with_its_weights(layers, head_type):
    saved = _clone(_tagger(layers, seed=1, head_type=head_type).state_dict())
    model = _tagger(layers, seed=2, head_type=head_type)
    assert not torch.equal(model.state_dict()[f"classification_heads.{HEAD}.out_proj.weight"],
                           saved[f"classification_heads.{HEAD}.out_proj.weight"])  # fmt: skip
    model.load_state_dict(saved)  # fairseq's load: upgrade_state_dict, then strict loading
    state = model.state_dict()
    assert state.keys() == saved.keys()
    assert all(torch.equal(state[key], value) for key, value in saved.items())


@pytest.mark.parametrize("saved_layers, model_layers", [(2, 1), (1, 2)])
def test_a_head_of_other_layers_gives_way_to_the_models_own(saved_layers, model_layers, caplog):
    saved = _clone(_tagger(saved_layers, seed=1).state_dict())
    model = _tagger(model_layers, seed=2)
    own = _clone(model.classification_heads[HEAD].state_dict())
    with caplog.at_level(logging.WARNING):
        model.load_state_dict(saved)
    assert f"deleting classification head ({HEAD}) from checkpoint with different" in caplog.text
    head = model.classification_heads[HEAD].state_dict()
    assert head.keys() == own.keys()
    assert all(torch.equal(head[key], value) for key, value in own.items())
    encoder = "encoder.sentence_encoder.layers.0.fc1.weight"
    assert torch.equal(model.state_dict()[encoder], saved[encoder])


def test_a_one_layer_head_the_model_lacks_is_dropped(caplog):
    saved = _clone(_tagger(1, seed=1).state_dict())
    model = _tagger(None, seed=2)
    with caplog.at_level(logging.WARNING):
        model.load_state_dict(saved)
    assert f"deleting classification head ({HEAD}) from checkpoint not present" in caplog.text
    assert HEAD not in model.classification_heads


def test_fairseqs_own_roberta_refuses_a_one_layer_head(tmp_path):
    """fairseq's RobertaModel would fail on reloading such a head; it is refused when built."""
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    (tmp_path / "finetune.json").write_text('{"task": "pos"}', encoding="utf-8")
    for name, symbols in (("input0", ["\u2581a", "b"]), ("labels", ["NOUN", "VERB"])):
        (tmp_path / name).mkdir()
        (tmp_path / name / "dict.txt").write_text("".join(f"{s} 1\n" for s in symbols), "utf-8")
    user_dir = str(Path(fairseq_struct.plugin.__file__).parent)
    arguments = [str(tmp_path), "--user-dir", user_dir, "--task", "token_classification"]
    arguments += ["--encoder-layers", "1", "--encoder-embed-dim", "32", "--max-positions", "16"]
    arguments += ["--encoder-ffn-embed-dim", "64", "--encoder-attention-heads", "2", "--cpu"]
    for arch, refused in (("roberta", True), ("bert_tiny", False)):
        parser = options.get_training_parser()
        args = options.parse_args_and_arch(
            parser, [*arguments, "--arch", arch, "--head-layers", "1"]
        )
        cfg = convert_namespace_to_omegaconf(args)
        task = tasks.setup_task(cfg.task)
        if refused:
            with pytest.raises(ValueError, match="--head-layers 1 needs a model of fairseq-struct"):
                task.build_model(cfg.model)
        else:
            assert task.build_model(cfg.model).classification_heads[HEAD_NAME].dense is None
