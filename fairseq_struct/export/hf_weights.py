"""A checkpoint's weights under the names of the exported model (`export.hf`): the project's
encoder code (hf_code/) or transformers' own roberta."""

import re
from typing import Any, Dict, List

import torch
from torch import Tensor

from fairseq_struct.export.hf_checkpoint import (
    MASKED_LM,
    TOKEN_CLASSIFICATION,
    FairseqCheckpoint,
    UnsupportedCheckpoint,
    is_stock_roberta,
    lm_head_is_tied,
)


def struct_state_dict(checkpoint: FairseqCheckpoint) -> Dict[str, Tensor]:
    """fairseq's parameters under the exported model's names, plus the lookup tables that
    fairseq derives from its dictionary (saved as buffers in the export)."""
    from fairseq_struct.pieces.word_boundaries import special_symbol_lookup, word_start_lookup

    kind, model = checkpoint.kind, checkpoint.model
    tied = checkpoint.kind == MASKED_LM and lm_head_is_tied(checkpoint)
    stock = is_stock_roberta(checkpoint)
    mapped: Dict[str, Tensor] = {}
    unknown: List[str] = []
    for key, value in model.state_dict().items():
        if key.startswith("encoder.sentence_encoder."):
            name = key[len("encoder.sentence_encoder.") :]
            if name == "version":
                continue
            if stock and name == "embed_positions.weight":
                name = "embed_positions.positions.weight"
            name = name.replace("embed_positions.embedding.", "embed_positions.")
            name = re.sub(r"^(layers\.\d+\.self_attn\.)attention\.", r"\1", name)
            mapped[f"encoder.{name}"] = value
        elif key.startswith("encoder.lm_head."):
            if kind == MASKED_LM and not (tied and key == "encoder.lm_head.weight"):
                mapped["lm_head." + key[len("encoder.lm_head.") :]] = value
        elif key.startswith("classification_heads."):
            head, name = key[len("classification_heads.") :].split(".", 1)
            if head == checkpoint.head_name:  # the others are listed in HFExport.left_out
                prefix = "" if name.startswith("crf.") else "classifier."
                mapped[prefix + name] = value
        else:
            unknown.append(key)
    if unknown:
        raise UnsupportedCheckpoint(
            f"{checkpoint.path}: parameters the export does not know: {', '.join(unknown)}"
        )
    encoder = checkpoint.sentence_encoder
    lookup = getattr(encoder, "word_start_lookup", None)
    if lookup is None:  # stock roberta: only token-classification decoding reads it
        try:
            lookup = word_start_lookup(checkpoint.dictionary)
        except ValueError:  # no ▁ piece at all: word-level data
            lookup = torch.ones(len(checkpoint.dictionary), dtype=torch.bool)
    mapped["encoder.word_start_lookup"] = lookup.bool().cpu()
    mapped["encoder.special_symbol_lookup"] = special_symbol_lookup(checkpoint.dictionary)
    if hasattr(encoder.embed_tokens, "word_characters"):
        mapped["encoder.embed_tokens.word_characters"] = encoder.embed_tokens.word_characters
    if kind == TOKEN_CLASSIFICATION:
        crf = getattr(model.classification_heads[checkpoint.head_name], "crf", None)
        if crf is not None:
            if crf.forbidden is None:  # LCRF: no forbidden-transition parameters to load
                mapped["crf.forbidden_factor"] = torch.ones(())
                mapped["crf.forbidden_penalty"] = torch.zeros(())
                mapped["crf.forbidden"] = torch.zeros_like(crf.transition_weights)
            else:
                mapped["crf.forbidden"] = crf.forbidden
    return mapped


def roberta_state_dict(checkpoint: FairseqCheckpoint, config: Any) -> Dict[str, Tensor]:
    """fairseq's roberta under transformers' Roberta names (its conversion script's mapping)."""
    encoder = checkpoint.sentence_encoder
    weights = {
        key: value
        for key, value in checkpoint.model.state_dict().items()
        if not key.endswith(".version")
    }
    source = "encoder.sentence_encoder."
    mapped: Dict[str, Tensor] = {
        "roberta.embeddings.word_embeddings.weight": weights.pop(source + "embed_tokens.weight"),
        "roberta.embeddings.position_embeddings.weight": weights.pop(
            source + "embed_positions.weight"
        ),
        # fairseq roberta has no token types: one row of zeros.
        "roberta.embeddings.token_type_embeddings.weight": torch.zeros(1, config.hidden_size),
    }
    for part in ("weight", "bias"):
        mapped[f"roberta.embeddings.LayerNorm.{part}"] = weights.pop(
            f"{source}layernorm_embedding.{part}"
        )
    names = {
        "self_attn.q_proj": "attention.self.query",
        "self_attn.k_proj": "attention.self.key",
        "self_attn.v_proj": "attention.self.value",
        "self_attn.out_proj": "attention.output.dense",
        "self_attn_layer_norm": "attention.output.LayerNorm",
        "fc1": "intermediate.dense",
        "fc2": "output.dense",
        "final_layer_norm": "output.LayerNorm",
    }
    for index in range(len(encoder.layers)):
        for fairseq_name, hf_name in names.items():
            for part in ("weight", "bias"):
                mapped[f"roberta.encoder.layer.{index}.{hf_name}.{part}"] = weights.pop(
                    f"{source}layers.{index}.{fairseq_name}.{part}"
                )
    lm_weights = {key: weights.pop(key) for key in list(weights) if key.startswith("encoder.lm_")}
    if checkpoint.kind == MASKED_LM:
        decoder = lm_weights["encoder.lm_head.weight"]
        mapped.update(
            {
                "lm_head.dense.weight": lm_weights["encoder.lm_head.dense.weight"],
                "lm_head.dense.bias": lm_weights["encoder.lm_head.dense.bias"],
                "lm_head.layer_norm.weight": lm_weights["encoder.lm_head.layer_norm.weight"],
                "lm_head.layer_norm.bias": lm_weights["encoder.lm_head.layer_norm.bias"],
                "lm_head.decoder.weight": decoder,
                "lm_head.decoder.bias": lm_weights["encoder.lm_head.bias"],
                "lm_head.bias": lm_weights["encoder.lm_head.bias"],
            }
        )
    prefix = f"classification_heads.{checkpoint.head_name}."
    for key in list(weights):
        if checkpoint.head_name and key.startswith(prefix):
            mapped["classifier." + key[len(prefix) :]] = weights.pop(key)
        elif key.startswith("classification_heads."):  # listed in HFExport.left_out
            weights.pop(key)
    if weights:
        raise UnsupportedCheckpoint(
            f"{checkpoint.path}: parameters the export does not know: {', '.join(weights)}"
        )
    return mapped
