"""An imported model exported again (`export.hf`) is a stock transformers model (no remote
code) that gives back the original model's outputs, with the original tokenizer's ids."""

import pytest
import torch
from tiny_hf_models import (
    bert2d_reference,
    bert2d_reference_outputs,
    long_word_lines,
    turkish_lines,
)

from fairseq_struct.export.hf import main as export


@pytest.mark.parametrize(
    "name, model_class",
    [("bert-pretraining", "BertForMaskedLM"), ("xlmr", "XLMRobertaForMaskedLM")],
)
def test_import_then_export_gives_back_the_original_model(
    tiny_hf_models, tmp_path, name, model_class
):
    import transformers

    assert export([str(tiny_hf_models / "imported" / name / "model.pt"), str(tmp_path / "hf")]) == 0
    exported = transformers.AutoModelForMaskedLM.from_pretrained(str(tmp_path / "hf")).eval()
    assert type(exported).__name__ == model_class
    original_class = "BertForPreTraining" if name.startswith("bert") else model_class
    original = (
        getattr(transformers, original_class)
        .from_pretrained(str(tiny_hf_models / "hf" / name))
        .eval()
    )
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "hf"))
    original_tokenizer = transformers.AutoTokenizer.from_pretrained(
        str(tiny_hf_models / "hf" / name)
    )
    lines = [" ".join(line.split()[: 2 + i]) for i, line in enumerate(turkish_lines()[200:206])]
    options = dict(padding=True, truncation=True, max_length=60, return_tensors="pt")
    batch = tokenizer(lines[:3], lines[3:], **options)
    assert torch.equal(
        batch["input_ids"], original_tokenizer(lines[:3], lines[3:], **options)["input_ids"]
    )
    with torch.no_grad():
        ours = exported(**batch, output_hidden_states=True)
        theirs = original(**batch, output_hidden_states=True)
    mask = batch["attention_mask"].bool()
    assert (ours.hidden_states[-1] - theirs.hidden_states[-1])[mask].abs().max() <= 1e-5
    reference = getattr(theirs, "prediction_logits", None)
    reference = theirs.logits if reference is None else reference
    assert (ours.logits - reference)[mask].abs().max() <= 1e-5


def test_a_bert2d_import_exports_to_the_published_definition(tiny_hf_models, tmp_path):
    """BERT2D has no transformers class: the export writes the project's code
    (trust_remote_code) beside the original, stock tokenizer, and reads its ids; its outputs
    are the published BERT2D's (stock BERT given the 2D embeddings), pairs included."""
    import transformers

    m = 3
    source = tiny_hf_models / "hf" / f"bert2d-m{m}"
    imported = tiny_hf_models / "imported" / f"bert2d-m{m}" / "model.pt"
    assert export([str(imported), str(tmp_path / "hf")]) == 0
    exported = transformers.AutoModelForMaskedLM.from_pretrained(
        str(tmp_path / "hf"), trust_remote_code=True
    ).eval()
    assert type(exported).__name__ == "StructEncoderForMaskedLM"
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "hf"))
    assert type(tokenizer).__name__ == "BertTokenizer"  # stock: no remote tokenizer
    reference, tables = bert2d_reference(source, m)
    original_tokenizer = transformers.AutoTokenizer.from_pretrained(str(source))
    lines = long_word_lines(original_tokenizer, turkish_lines())
    short = [" ".join(line.split()[:12]) for line in lines]
    options = dict(padding=True, truncation=True, max_length=60, return_tensors="pt")
    half = len(short) // 2
    for batch, original_batch in (
        (tokenizer(short, **options), original_tokenizer(short, **options)),
        (
            tokenizer(short[:half], short[half:], **options),
            original_tokenizer(short[:half], short[half:], **options),
        ),
    ):
        # The stock tokenizer's token types (1 after the first [SEP]) are taken as they are.
        assert set(batch) == {"input_ids", "token_type_ids", "attention_mask"}
        for name in batch:
            assert torch.equal(batch[name], original_batch[name])
        expected, _, _ = bert2d_reference_outputs(reference, tables, original_tokenizer,
                                                  original_batch)  # fmt: skip
        with torch.no_grad():
            ours = exported(**batch, output_hidden_states=True)
        mask = batch["attention_mask"].bool()
        assert (ours.hidden_states[-1] - expected.hidden_states[-1])[mask].abs().max() <= 1e-5
        assert (ours.logits - expected.prediction_logits)[mask].abs().max() <= 1e-5
    # Token types other than the rule's are used as given, as the published BERT2D uses them:
    # pairs all of type 0 give the original model's outputs for all-0 types.
    zeros = dict(batch, token_type_ids=torch.zeros_like(batch["token_type_ids"]))
    assert not torch.equal(zeros["token_type_ids"], batch["token_type_ids"])
    expected, _, _ = bert2d_reference_outputs(reference, tables, original_tokenizer, zeros)
    with torch.no_grad():
        ours = exported(**zeros, output_hidden_states=True)
        as_the_rule = exported(**batch).logits
    assert (ours.logits - expected.prediction_logits)[mask].abs().max() <= 1e-5
    assert (ours.logits - as_the_rule)[mask].abs().max() > 1e-3  # the types were used
