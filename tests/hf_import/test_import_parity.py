"""An imported model computes what transformers computes with the original: last hidden states
and masked-LM logits within 1e-5 (fp32) on real Turkish sentences, padded, single and paired,
for every class the importer takes. BERT2D's reference is stock `BertModel` with its position
table zeroed and the word + 2D position embeddings passed as `inputs_embeds` (the published
definition), the ids from `bert2d_reference_ids`.

The vocabularies are trained on the Turkish text of ../shared/data (real words, with İ/ı,
accents and punctuation); without it these tests skip, saying so.
"""

import json
from pathlib import Path
from typing import Dict, List

import pytest
import torch
from tiny_hf_models import (
    BERT2D_M,
    NEEDS_TURKISH_TEXT,
    bert2d_reference,
    bert2d_reference_outputs,
    long_word_lines,
    turkish_lines,
)

pytestmark = NEEDS_TURKISH_TEXT
TOLERANCE = 1e-5


def load_imported(directory: Path):
    from fairseq import checkpoint_utils

    # No override: the checkpoint names its own directory as its data (dict.txt).
    models, _, task = checkpoint_utils.load_model_ensemble_and_task([str(directory / "model.pt")])
    return models[0].eval(), task.source_dictionary


def fairseq_ids(tokenizer, dictionary, input_ids: torch.Tensor) -> torch.Tensor:
    """The imported dictionary's ids of the tokenizer's ids (specials under fairseq's names)."""
    from fairseq_struct.pieces.hf_tokenizer import special_token_names, special_tokens

    names = special_token_names(special_tokens(tokenizer))
    tokens = tokenizer.convert_ids_to_tokens(input_ids.flatten().tolist())
    return torch.tensor([dictionary.index(names.get(t, t)) for t in tokens]).view_as(input_ids)


def hf_order(tokenizer, dictionary) -> torch.Tensor:
    """hf_order[i]: the tokenizer's id of the dictionary's symbol i."""
    from fairseq_struct.pieces.hf_tokenizer import special_token_names, special_tokens

    fairseq_to_hf = {
        name: token for token, name in special_token_names(special_tokens(tokenizer)).items()
    }
    vocab = tokenizer.get_vocab()
    return torch.tensor([vocab[fairseq_to_hf.get(s, s)] for s in dictionary.symbols])


def batches(tokenizer, lines: List[str]) -> Dict[str, dict]:
    """Padded batches of single sentences and of sentence pairs (lengths differ within each)."""
    lines = [" ".join(line.split()[: 2 + i]) for i, line in enumerate(lines)]
    options = dict(padding=True, truncation=True, max_length=60, return_tensors="pt")
    return {
        "single": tokenizer(lines[:6], **options),
        "pairs": tokenizer(lines[:4], lines[6:10], **options),
    }


def fairseq_outputs(model, dictionary, tokenizer, batch):
    tokens = fairseq_ids(tokenizer, dictionary, batch["input_ids"])
    with torch.no_grad():
        features, _ = model(tokens, features_only=True)
        logits, _ = model(tokens)
    in_hf_order = torch.empty_like(logits)
    in_hf_order[..., hf_order(tokenizer, dictionary)] = logits
    return features, in_hf_order


def assert_close(ours, reference, mask, what):
    difference = (ours - reference)[mask].abs().max().item()
    assert difference <= TOLERANCE, f"{what}: max |difference| {difference:.3g} > {TOLERANCE}"


@pytest.mark.parametrize(
    "name, model_class",
    [
        ("bert-pretraining", "BertForPreTraining"),
        ("bert-masked-lm", "BertForMaskedLM"),
        ("bert-model", "BertModel"),
        ("xlmr", "XLMRobertaForMaskedLM"),
    ],
)
def test_imported_bert_and_xlmr_match_transformers(tiny_hf_models, name, model_class):
    import transformers

    source = tiny_hf_models / "hf" / name
    reference = getattr(transformers, model_class).from_pretrained(str(source)).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(source))
    model, dictionary = load_imported(tiny_hf_models / "imported" / name)
    if name.startswith("bert-") and name != "bert-model":  # every weight, each once
        report = json.loads((tiny_hf_models / "imported" / name / "hf_import.json").read_text())
        assert report["parameters"] == sum(p.numel() for p in reference.parameters())
    for kind, batch in batches(tokenizer, turkish_lines()[100:114]).items():
        mask = batch["attention_mask"].bool()
        assert not mask.all(), "the batch must have padding"
        with torch.no_grad():
            out = reference(**batch, output_hidden_states=True)
        features, logits = fairseq_outputs(model, dictionary, tokenizer, batch)
        assert_close(features, out.hidden_states[-1], mask, f"{name} {kind} hidden states")
        reference_logits = getattr(out, "prediction_logits", getattr(out, "logits", None))
        if reference_logits is not None:
            assert_close(logits, reference_logits, mask, f"{name} {kind} MLM logits")


@pytest.mark.parametrize("m", BERT2D_M)
def test_imported_bert2d_matches_the_published_definition(tiny_hf_models, m):
    from transformers import BertTokenizer

    source = tiny_hf_models / "hf" / f"bert2d-m{m}"
    reference, tables = bert2d_reference(source, m)
    tokenizer = BertTokenizer.from_pretrained(str(source))
    model, dictionary = load_imported(tiny_hf_models / "imported" / f"bert2d-m{m}")
    lines = long_word_lines(tokenizer, turkish_lines())
    short = [" ".join(line.split()[:12]) for line in lines]
    options = dict(padding=True, truncation=True, max_length=60, return_tensors="pt")
    for kind, batch in {
        "single": tokenizer(short, **options),
        "pairs": tokenizer(short[: len(short) // 2], short[len(short) // 2 :], **options),
    }.items():
        out, word_ids, subword_ids = bert2d_reference_outputs(reference, tables, tokenizer, batch)
        mask = batch["attention_mask"].bool()
        features, logits = fairseq_outputs(model, dictionary, tokenizer, batch)
        assert_close(features, out.hidden_states[-1], mask, f"M={m} {kind} hidden states")
        assert_close(logits, out.prediction_logits, mask, f"M={m} {kind} MLM logits")
        if m == 1 and kind == "pairs":  # the ids were not all alike: restart and subword ids
            assert int(subword_ids.max()) == m + 1
            assert bool((word_ids[:, 1:] == 0).any())
