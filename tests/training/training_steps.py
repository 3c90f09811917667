"""Models, criteria and batches of one training step of every kind the project trains, shared by
the host-synchronisation test and the device-placement test (both drive the same steps)."""

from types import SimpleNamespace
from typing import Any, Dict, Tuple

import torch
from conftest import tiny_mlm_task
from fairseq.criterions.sentence_prediction import SentencePredictionConfig
from fairseq.data import Dictionary

import fairseq_struct.plugin  # noqa: F401  (registers the models)
from fairseq_struct.criterions.extractive_qa import ExtractiveQACriterion
from fairseq_struct.criterions.sentence_prediction_f1 import SentencePredictionF1Criterion
from fairseq_struct.criterions.token_classification import TokenClassificationCriterion
from fairseq_struct.modules.token_classification_heads import (
    SpanExtractionHead,
    TokenClassificationHead,
)
from fairseq_struct.testing.build_from_arch import build_model_from_arch

NER_TAGS = ("O", "B-PER", "I-PER", "B-LOC", "I-LOC")


def translation_batch(dictionary: Dictionary) -> Dict[str, Any]:
    torch.manual_seed(1)
    src = torch.randint(4, len(dictionary), (3, 7))
    src[0, 5:] = dictionary.pad()
    target = torch.randint(4, len(dictionary), (3, 6))
    target[1, 4:] = dictionary.pad()
    prev = torch.cat([torch.full((3, 1), dictionary.eos()), target[:, :-1]], dim=1)
    return {
        "net_input": {
            "src_tokens": src,
            "src_lengths": torch.tensor([5, 7, 7]),
            "prev_output_tokens": prev,
        },
        "target": target,
        "ntokens": int(target.ne(dictionary.pad()).sum()),
        "nsentences": 3,
    }


def mlm_batch(data, tokens_are_words: bool = False, sentence_objective: str = "none"):
    """The `masked_lm_struct` task on a `tiny_mlm_data` corpus and a collated batch of 6."""
    task = tiny_mlm_task(data, sentence_objective, tokens_are_words)
    dataset = task.dataset("valid")
    return task, dataset.collater([dataset[i] for i in range(6)])


def piece_dictionary() -> Dictionary:
    dictionary = Dictionary()
    for i in range(30):
        dictionary.add_symbol(("\u2581" if i % 2 else "") + f"p{i}")
    dictionary.add_symbol("<mask>")
    return dictionary


def encoder_batch(dictionary: Dictionary) -> Dict[str, torch.Tensor]:
    torch.manual_seed(2)
    src = torch.randint(4, len(dictionary) - 1, (3, 9))
    src[0, 7:] = dictionary.pad()
    return {"src_tokens": src, "src_lengths": torch.tensor([7, 9, 9])}


def token_classification_step(head_type: str, entity_fix: bool = False) -> Tuple[Any, Any, dict]:
    """A bert2d_tiny encoder with a token-classification head of `head_type`, its criterion
    and a batch with labels on the first piece of every word."""
    dictionary = piece_dictionary()
    labels = Dictionary()
    for tag in NER_TAGS:
        labels.add_symbol(tag)
    model = build_model_from_arch("bert2d_tiny", dictionary, seed=0, position_embedding="2d")
    head = TokenClassificationHead(128, 128, labels.symbols[labels.nspecial :], head_type)
    model.classification_heads["tags"] = head
    net_input = encoder_batch(dictionary)
    target = torch.randint(labels.nspecial, len(labels), net_input["src_tokens"].shape)
    target[:, 1::2] = labels.pad()  # labels on the first piece of a word only
    target[0, 7:] = labels.pad()
    task = SimpleNamespace(
        head=lambda m: m.classification_heads["tags"],
        label_dictionary=labels,
        cfg=SimpleNamespace(classification_head_name="tags", entity_fix=entity_fix),
        metric="entity_f1",
    )
    sample = {
        "net_input": net_input,
        "target": target,
        "ntokens": 25,
        "nsentences": 3,
        "nwords": int(target.ne(labels.pad()).sum()),
    }
    return model, TokenClassificationCriterion(task), sample


def sentence_prediction_and_qa_steps() -> Tuple[Any, list]:
    """A bert2d_tiny encoder with a sentence-classification head and a QA span head, and the
    (criterion, sample) pairs of both tasks."""
    dictionary = piece_dictionary()
    model = build_model_from_arch("bert2d_tiny", dictionary, seed=0, position_embedding="2d")
    model.register_classification_head("sentence_classification_head", num_classes=2)
    model.classification_heads["qa"] = SpanExtractionHead(128, 128)
    net_input = encoder_batch(dictionary)
    classify = SentencePredictionF1Criterion(
        SentencePredictionConfig(), SimpleNamespace(label_dictionary=None)
    )
    sentence_sample = {
        "net_input": net_input,
        "target": torch.tensor([0, 1, 1]),
        "ntokens": 25,
        "nsentences": 3,
    }
    qa_task = SimpleNamespace(
        cfg=SimpleNamespace(classification_head_name="qa", max_answer_length=5),
        target_dictionary=dictionary,
    )
    context = "ab cd ef gh"
    window = {"context": context, "answers": ["cd ef"], "context_offset": 3}
    spans = [[0, 2], [3, 5], [6, 8], [9, 11]]  # the context's units after `<s> q </s>`
    qa_sample = {
        "net_input": net_input,
        "start_positions": torch.tensor([1, 2, 3]),
        "end_positions": torch.tensor([2, 4, 3]),
        "ntokens": 25,
        "nsentences": 3,
        # What the QA task's collater adds for validation (answer texts from the logits).
        "windows": [dict(window, question=f"q{row}", spans=spans) for row in range(3)],
    }
    return model, [(classify, sentence_sample), (ExtractiveQACriterion(qa_task), qa_sample)]
