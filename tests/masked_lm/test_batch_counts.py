"""What the masked_lm_struct task's collater counts on the host so that a training step needs no
host synchronisation: the flat positions of the targets and the most words of a sequence."""

import torch

import fairseq_struct.plugin  # noqa: F401  (registers the models)
from fairseq_struct.pieces.word_boundaries import word_structure
from fairseq_struct.tasks.masked_lm_struct import MaskedLMStructConfig, MaskedLMStructTask
from fairseq_struct.testing.build_from_arch import build_model_from_arch


def _task_and_batch(data, size: int = 8):
    cfg = MaskedLMStructConfig(data=str(data), seed=1, tokens_per_sample=48)
    task = MaskedLMStructTask.setup_task(cfg)
    task.load_dataset("valid")
    dataset = task.dataset("valid")
    return task, dataset.collater([dataset[i] for i in range(size)])


def test_masked_positions_are_the_flat_indices_of_the_targets(tiny_mlm_data):
    task, sample = _task_and_batch(tiny_mlm_data["pieces"])
    target = sample["target"]
    expected = target.ne(task.source_dictionary.pad()).view(-1).nonzero().squeeze(1)
    assert sample["masked_positions"].numel() > 0
    assert torch.equal(sample["masked_positions"], expected)
    assert sample["net_input"]["src_tokens"].shape == target.shape


def test_max_words_is_the_most_words_of_a_real_sequence(tiny_mlm_data):
    task, sample = _task_and_batch(tiny_mlm_data["pieces"])
    net_input = sample["net_input"]
    tokens = net_input["src_tokens"]
    structure = word_structure(net_input["word_starts"], tokens, task.source_dictionary.eos())
    real = tokens.ne(task.source_dictionary.pad())
    expected = int((structure.word_index.masked_fill(~real, -1).max(dim=1).values + 1).max())
    assert net_input["max_words"] == expected
    assert expected < tokens.size(1)  # fewer word slots than tokens: the point of counting


def test_whole_word_attention_with_max_words_equals_one_slot_per_token(tiny_mlm_data):
    task, sample = _task_and_batch(tiny_mlm_data["pieces"])
    model = build_model_from_arch(
        "bert2d_tiny", task.source_dictionary, seed=0, whole_word_attention=True
    ).eval()
    net_input = dict(sample["net_input"])
    attention = model.encoder.sentence_encoder.layers[0].self_attn.attention
    batch, length = net_input["src_tokens"].shape
    slots, window = net_input["max_words"], 2 * attention.window + 1
    with torch.no_grad():
        counted, _ = model(**net_input, features_only=True)
        assert attention.last_energy_count == batch * (slots**2 + window * length)
        net_input["max_words"] = None
        every_token, _ = model(**net_input, features_only=True)
        assert attention.last_energy_count == batch * (length**2 + window * length)
    torch.testing.assert_close(counted, every_token, rtol=0, atol=1e-5)
    assert slots < length
