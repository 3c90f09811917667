"""The export's parity check (`export.hf`): fairseq and the transformers model on the same
batch must give the same outputs."""

from typing import Any, Dict, Tuple

import torch
from torch import Tensor

from fairseq_struct.export.hf_checkpoint import (
    MASKED_LM,
    SEQUENCE_CLASSIFICATION,
    FairseqCheckpoint,
)
from fairseq_struct.export.hf_model import HFExport


class ExportMismatch(RuntimeError):
    """The transformers model does not compute what fairseq computes (the parity check)."""


def check_inputs(dictionary: Any, max_positions: int, seed: int = 0) -> Tensor:
    """Two rows that exercise what the models compute: `<s> A </s> B </s>` (two segments) and a
    shorter row with padding; units drawn from the ordinary symbols of the dictionary."""
    generator = torch.Generator().manual_seed(seed)
    length = max(6, min(16, max_positions - 2))
    ordinary = [
        index
        for index in range(dictionary.nspecial, len(dictionary))
        if dictionary[index] != "<mask>" and not dictionary[index].startswith("madeupword")
    ] or [dictionary.unk()]
    pick = torch.tensor(ordinary)[torch.randint(len(ordinary), (2, length), generator=generator)]
    rows = pick.clone()
    rows[:, 0] = dictionary.bos()
    rows[0, length // 2] = dictionary.eos()
    rows[:, -1] = dictionary.eos()
    rows[1, length - 3 :] = dictionary.pad()
    rows[1, length - 4] = dictionary.eos()
    return rows


def check_positions(checkpoint: FairseqCheckpoint) -> int:
    """The most tokens a row of `check_inputs` may have: what the model takes, and no more than
    its position table has rows (BERT2D's word table may be shorter than the sequences it takes,
    and any token of a random row may begin a word)."""
    limit = int(checkpoint.model.encoder.max_positions())
    positions = getattr(checkpoint.sentence_encoder, "embed_positions", None)
    table = getattr(getattr(positions, "embedding", None), "positions", None)
    return min(limit, table.num_embeddings) if table is not None else limit


@torch.no_grad()
def fairseq_outputs(checkpoint: FairseqCheckpoint, tokens: Tensor) -> Tuple[Tensor, Tensor]:
    """(last hidden states (B, T, C), head outputs) of the fairseq model, in eval mode."""
    model = checkpoint.model.eval()
    features, _ = model(tokens, features_only=True)
    if checkpoint.kind == MASKED_LM:
        outputs, _ = model(tokens)
    else:
        outputs, _ = model(
            tokens, features_only=True, classification_head_name=checkpoint.head_name
        )
    return features, outputs


@torch.no_grad()
def hf_outputs(model: Any, tokens: Tensor, pad: int) -> Tuple[Tensor, Tensor]:
    """(last hidden states, logits) of the transformers model."""
    mask = tokens.ne(pad).long()
    hidden = model.base_model(input_ids=tokens, attention_mask=mask).last_hidden_state
    return hidden, model(input_ids=tokens, attention_mask=mask).logits


def parity_check(
    checkpoint: FairseqCheckpoint, export: HFExport, tolerance: float = 1e-4
) -> Dict[str, float]:
    """The largest differences between fairseq and the export on `check_inputs` (real tokens
    only: transformers' Roberta does not zero the padding rows as fairseq does); raises
    ExportMismatch above `tolerance`."""
    tokens = check_inputs(checkpoint.dictionary, check_positions(checkpoint))
    expected_hidden, expected_logits = fairseq_outputs(checkpoint, tokens)
    hidden, logits = hf_outputs(export.model, tokens, checkpoint.dictionary.pad())
    real = tokens.ne(checkpoint.dictionary.pad())
    return checked(
        checkpoint, real, (hidden, logits), (expected_hidden, expected_logits), tolerance
    )


def checked(
    checkpoint: FairseqCheckpoint,
    real: Tensor,
    outputs: Tuple[Tensor, Tensor],
    expected: Tuple[Tensor, Tensor],
    tolerance: float,
) -> Dict[str, float]:
    """{output: largest |difference|} of the (hidden states, logits) `outputs` against fairseq's
    `expected`, over the `real` tokens (a sentence head's logits: all of them); ExportMismatch
    above `tolerance`."""
    (hidden, logits), (expected_hidden, expected_logits) = outputs, expected
    if checkpoint.kind != SEQUENCE_CLASSIFICATION:
        logits, expected_logits = logits[real], expected_logits[real]
    differences = {
        "hidden_states": float((hidden - expected_hidden)[real].abs().max()),
        "logits": float((logits - expected_logits).abs().max()),
    }
    for name, difference in differences.items():
        if not difference <= tolerance:
            raise ExportMismatch(
                f"{checkpoint.path}: the exported model's {name} differ from fairseq's by "
                f"{difference:.3g} (> {tolerance}): the export would compute something else"
            )
    return differences
