"""--max-len-a per sentence (generation/per_sentence_length.py): a sentence's hypotheses stop at
max_len_a × its own source length + max_len_b, whatever it is batched with, so decoding it in a
batch gives what decoding it alone gives; fairseq's generator limits it by the batch's longest
source instead. Checked on an untrained tiny TP-Transformer, whose hypotheses run to the limit."""

import pytest
import torch
from fairseq.sequence_generator import SequenceGenerator

import fairseq_struct.plugin  # noqa: F401  (registers the models and tasks)
from fairseq_struct.generation.per_sentence_length import PerSentenceLengthGenerator
from fairseq_struct.testing.build_from_arch import build_model_from_arch, joined_dictionary

MAX_LEN_A, MAX_LEN_B = 0.5, 1


@pytest.fixture(scope="module")
def model_and_batch():
    torch.manual_seed(3)
    dictionary = joined_dictionary(40)
    model = build_model_from_arch("tp_transformer_tiny", dictionary).eval()
    tokens = torch.randint(dictionary.nspecial, len(dictionary), (2, 12))
    tokens[:, -1] = dictionary.eos()
    tokens[1, :8] = dictionary.pad()  # left-padded, as fairseq batches sources: 4 tokens
    return model, dictionary, tokens, torch.tensor([12, 4])


def decode(generator_class, model, dictionary, tokens, lengths):
    generator = generator_class(
        [model], dictionary, beam_size=3, max_len_a=MAX_LEN_A, max_len_b=MAX_LEN_B
    )
    with torch.no_grad():
        sample = {"net_input": {"src_tokens": tokens, "src_lengths": lengths}}
        return [[hypo["tokens"].tolist() for hypo in hypos] for hypos in generator(sample)]


def test_a_short_sentence_stops_at_its_own_limit_in_any_batch(model_and_batch):
    model, dictionary, tokens, lengths = model_and_batch
    batched = decode(PerSentenceLengthGenerator, model, dictionary, tokens, lengths)
    alone = decode(PerSentenceLengthGenerator, model, dictionary, tokens[1:, 8:], lengths[1:])
    assert batched[1] == alone[0]
    # 0.5 × 4 + 1 = 3 tokens, then the end of sentence; the long source's 0.5 × 12 + 1 = 7.
    assert max(len(hypothesis) for hypothesis in batched[1]) == 3 + 1
    assert max(len(hypothesis) for hypothesis in batched[0]) == 7 + 1


def test_fairseqs_generator_limits_it_by_the_longest_source_of_the_batch(model_and_batch):
    model, dictionary, tokens, lengths = model_and_batch
    batched = decode(SequenceGenerator, model, dictionary, tokens, lengths)
    alone = decode(SequenceGenerator, model, dictionary, tokens[1:, 8:], lengths[1:])
    assert max(len(hypothesis) for hypothesis in alone[0]) == 3 + 1
    assert max(len(hypothesis) for hypothesis in batched[1]) > 3 + 1
