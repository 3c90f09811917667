"""Export of checkpoints whose units are a Hugging Face tokenizer's (`export.hf`): an imported
BERTurk, mBERT, XLM-R or BERT2D, fine-tuned or not, or a model pretrained on WordPiece.

The directory holds the original tokenizer and the model reads its ids, so an unchanged import
gives back the original model's outputs. Where transformers' own Bert / XLMRoberta classes compute
the checkpoint exactly, it is written as them; otherwise as the exported code (hf_code/).
"""

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional

import torch
from torch import Tensor

from fairseq_struct.export.hf_checkpoint import (
    MASKED_LM,
    SEQUENCE_CLASSIFICATION,
    TOKEN_CLASSIFICATION,
    FairseqCheckpoint,
    UnsupportedCheckpoint,
    checkpoint_labels,
    checkpoint_option,
    pretraining_directory,
)
from fairseq_struct.export.hf_model import build_hf_model
from fairseq_struct.export.hf_parity import (
    check_inputs,
    check_positions,
    checked,
    fairseq_outputs,
)
from fairseq_struct.hf_import.directory import HF_TOKENIZER_DIR
from fairseq_struct.hf_import.layouts import ACTIVATIONS as IMPORTED_ACTIVATIONS
from fairseq_struct.hf_import.layouts import ENCODER, LAYER_WEIGHTS
from fairseq_struct.morph.units import IMPORT_REPORT, PRETRAINING_REPORT
from fairseq_struct.pieces.hf_tokenizer import (
    BERT_VOCABULARY_FILE,
    map_vocabulary,
    special_tokens,
)

# transformers' name of each fairseq activation: the import's table, read backwards.
ACTIVATIONS = {fairseq: hf for hf, fairseq in IMPORTED_ACTIVATIONS.items()}


# The exported code's tensors with a row per symbol: put in the tokenizer's order.
VOCABULARY_ROWS = (
    "encoder.embed_tokens.weight",
    "encoder.word_start_lookup",
    "encoder.special_symbol_lookup",
    "lm_head.weight",
    "lm_head.bias",
)


@dataclass
class TokenizerExport:
    model: Any
    tokenizer: Any
    hf_ids: Tensor  # the tokenizer's id of each fairseq symbol
    native: bool  # transformers' own class (else the project's exported code)


def tokenizer_units_dir(checkpoint: FairseqCheckpoint, pretraining_data: Optional[Path]) -> Any:
    """The directory of the checkpoint's units when they are a tokenizer's, else None."""
    directory = pretraining_directory(checkpoint, pretraining_data)
    if (directory / IMPORT_REPORT).exists():
        return directory
    prepared = directory / PRETRAINING_REPORT
    if prepared.exists() and json.loads(prepared.read_text("utf-8"))["units"] == "tokenizer":
        return directory
    return None


def _tokenizer(units_dir: Path) -> Any:
    """The model's own transformers tokenizer: an import's saved one, or BERT's over the
    WordPiece vocabulary that prepare-mlm trained."""
    from transformers import AutoTokenizer, BertTokenizer

    if (units_dir / HF_TOKENIZER_DIR).is_dir():
        return AutoTokenizer.from_pretrained(
            str(units_dir / HF_TOKENIZER_DIR), local_files_only=True
        )
    report = json.loads((units_dir / PRETRAINING_REPORT).read_text("utf-8"))
    settings = report.get("wordpiece", {})
    lowercase = bool(settings.get("lowercase", False))
    return BertTokenizer(
        vocab=str(units_dir / PRETRAINING_REPORT.parent / BERT_VOCABULARY_FILE),  # text/
        do_lower_case=lowercase,
        # as prepare-mlm trained it (German keeps its umlauts); older reports: BERT's rule
        strip_accents=bool(settings.get("strip_accents", lowercase)),
    )


def _is_xlmr(units_dir: Path) -> bool:
    report = units_dir / IMPORT_REPORT
    if not report.exists():
        return False
    return json.loads(report.read_text("utf-8")).get("model_type") in ("xlm-roberta", "roberta")


def computed_by_transformers(checkpoint: FairseqCheckpoint) -> bool:
    """transformers' own BERT / XLM-R classes compute exactly this checkpoint."""
    from fairseq_struct.models.bert import StructBertModel

    args = checkpoint.args
    if not isinstance(checkpoint.model, StructBertModel):
        return False
    if any(
        checkpoint_option(args, name)
        for name in ("relative_positions", "whole_word_attention", "encoder_normalize_before")
    ):
        return False
    if checkpoint_option(args, "position_embedding", "1d") != "1d":
        return False
    if checkpoint_option(args, "activation_fn", "gelu") not in ACTIVATIONS:
        return False
    head_activation = checkpoint_option(args, "pooler_activation_fn", "tanh")
    if checkpoint.kind == TOKEN_CLASSIFICATION:
        # BERT's token classifier is one linear layer: a one-layer head (--head-layers 1), or
        # two layers with nothing between them (--pooler-activation-fn linear) multiplied.
        head = checkpoint.model.classification_heads[checkpoint.head_name]
        return head.head_type == "softmax" and (head.dense is None or head_activation == "linear")
    return checkpoint.kind == MASKED_LM or head_activation == "tanh"  # BERT's pooler


def build_tokenizer_units_model(checkpoint: FairseqCheckpoint, units_dir: Path) -> TokenizerExport:
    """The transformers model of a checkpoint on a tokenizer's units, in the tokenizer's ids."""
    tokenizer = _tokenizer(units_dir)
    vocabulary = tokenizer.get_vocab()
    mapping = map_vocabulary(vocabulary, special_tokens(tokenizer), len(vocabulary), units_dir)
    if mapping.symbols != list(checkpoint.dictionary.symbols):
        raise UnsupportedCheckpoint(
            f"{checkpoint.path}: its dictionary is not the vocabulary of {units_dir}'s tokenizer"
        )
    hf_ids = torch.tensor(mapping.hf_ids)
    if computed_by_transformers(checkpoint):
        return _stock_model(checkpoint, units_dir, tokenizer, hf_ids)
    return _exported_code_model(checkpoint, tokenizer, hf_ids)


def _exported_code_model(
    checkpoint: FairseqCheckpoint, tokenizer: Any, hf_ids: Tensor
) -> TokenizerExport:
    """The project's exported code (BERT2D, ...) with its symbol rows in the tokenizer's order,
    beside the stock tokenizer as it is: the model takes the token types it returns (segment 1
    after the first [SEP], the model's own rule)."""
    hf_export = build_hf_model(checkpoint)
    model = hf_export.model
    inverse = torch.empty_like(hf_ids)
    inverse[hf_ids] = torch.arange(len(hf_ids))
    state = model.state_dict()
    model.load_state_dict(
        {
            name: value[inverse] if name in VOCABULARY_ROWS else value
            for name, value in state.items()
        }
    )
    for name in ("pad_token_id", "bos_token_id", "eos_token_id", "unk_token_id", "mask_token_id"):
        fairseq_id = getattr(model.config, name, None)
        if fairseq_id is not None:
            setattr(model.config, name, int(hf_ids[fairseq_id]))
    return TokenizerExport(model.eval(), tokenizer, hf_ids, native=False)


def _stock_model(
    checkpoint: FairseqCheckpoint, units_dir: Path, tokenizer: Any, hf_ids: Tensor
) -> TokenizerExport:
    import transformers

    xlmr = _is_xlmr(units_dir)
    config = _config(checkpoint, tokenizer, xlmr)
    family = "XLMRoberta" if xlmr else "Bert"
    task = {
        MASKED_LM: "MaskedLM",
        SEQUENCE_CLASSIFICATION: "SequenceClassification",
        TOKEN_CLASSIFICATION: "TokenClassification",
    }[checkpoint.kind]
    model = getattr(transformers, f"{family}For{task}")(config)
    model.load_state_dict(_weights(checkpoint, hf_ids, xlmr, config), strict=True)
    if checkpoint.kind == MASKED_LM:
        model.tie_weights()
    return TokenizerExport(model.eval(), tokenizer, hf_ids, native=True)


def _config(checkpoint: FairseqCheckpoint, tokenizer: Any, xlmr: bool) -> Any:
    import transformers

    args = checkpoint.args
    encoder = checkpoint.sentence_encoder
    layer = encoder.layers[0]
    positions = checkpoint_option(args, "max_positions")
    values: Dict[str, Any] = dict(
        vocab_size=len(checkpoint.dictionary),
        hidden_size=layer.embed_dim,
        num_hidden_layers=len(encoder.layers),
        num_attention_heads=layer.self_attn.num_heads,
        intermediate_size=layer.fc1.out_features,
        hidden_act=ACTIVATIONS[checkpoint_option(args, "activation_fn", "gelu")],
        hidden_dropout_prob=float(checkpoint_option(args, "dropout", 0.1)),
        attention_probs_dropout_prob=float(checkpoint_option(args, "attention_dropout", 0.1)),
        type_vocab_size=max(1, int(checkpoint_option(args, "num_segments", 2))),
        layer_norm_eps=float(checkpoint_option(args, "layer_norm_eps", 1e-12)),
        pad_token_id=tokenizer.pad_token_id,
        max_position_embeddings=positions + (tokenizer.pad_token_id + 1 if xlmr else 0),
    )
    if checkpoint.kind != MASKED_LM:
        labels, problem = checkpoint_labels(checkpoint)
        values.update(
            classifier_dropout=float(checkpoint_option(args, "pooler_dropout", 0.0)),
            num_labels=len(labels),
            id2label=dict(enumerate(labels)),
            label2id={label: i for i, label in enumerate(labels)},
        )
        if checkpoint.kind == SEQUENCE_CLASSIFICATION:
            values.update(problem_type=problem or "single_label_classification")
    if xlmr:
        values.update(bos_token_id=tokenizer.cls_token_id, eos_token_id=tokenizer.sep_token_id)
        return transformers.XLMRobertaConfig(**values)
    return transformers.BertConfig(**values)


def _weights(checkpoint: FairseqCheckpoint, hf_ids: Tensor, xlmr: bool, config: Any) -> Dict:
    """The checkpoint's weights under transformers' names, rows in the tokenizer's order."""
    state = checkpoint.model.state_dict()
    base = "roberta." if xlmr else "bert."
    inverse = torch.empty_like(hf_ids)
    inverse[hf_ids] = torch.arange(len(hf_ids))
    positions = state[ENCODER + "embed_positions.embedding.positions.weight"]
    if xlmr:  # RoBERTa counts positions from padding_idx + 1; the rows before are never read
        positions = torch.cat(
            [positions.new_zeros(config.pad_token_id + 1, positions.shape[1]), positions]
        )
    segments = state.get(ENCODER + "embed_positions.embedding.segments.weight")
    if segments is None:
        segments = positions.new_zeros(1, positions.shape[1])
    weights = {
        base + "embeddings.word_embeddings.weight": state[ENCODER + "embed_tokens.weight"][inverse],
        base + "embeddings.position_embeddings.weight": positions,
        base + "embeddings.token_type_embeddings.weight": segments,
        base + "embeddings.LayerNorm.weight": state[ENCODER + "layernorm_embedding.weight"],
        base + "embeddings.LayerNorm.bias": state[ENCODER + "layernorm_embedding.bias"],
    }
    for layer in range(config.num_hidden_layers):
        for hf_name, fairseq_name in LAYER_WEIGHTS.items():
            for part in ("weight", "bias"):
                weights[f"{base}encoder.layer.{layer}.{hf_name}.{part}"] = state[
                    f"{ENCODER}layers.{layer}.{fairseq_name}.{part}"
                ]
    if checkpoint.kind == MASKED_LM:
        head = "encoder.lm_head."
        names = (
            ("lm_head.dense", "lm_head.layer_norm", "lm_head.decoder", "lm_head.bias")
            if xlmr
            else (
                "cls.predictions.transform.dense",
                "cls.predictions.transform.LayerNorm",
                "cls.predictions.decoder",
                "cls.predictions.bias",
            )
        )
        dense, norm, decoder, bias = names
        for hf_name, fairseq_name in ((dense, "dense"), (norm, "layer_norm")):
            for part in ("weight", "bias"):
                weights[f"{hf_name}.{part}"] = state[f"{head}{fairseq_name}.{part}"]
        weights[bias] = state[head + "bias"][inverse]
        weights[decoder + ".weight"] = state[head + "weight"][inverse]
        weights[decoder + ".bias"] = weights[bias]
    elif checkpoint.kind == TOKEN_CLASSIFICATION:
        head = f"classification_heads.{checkpoint.head_name}."
        out_weight, out_bias = state[head + "out_proj.weight"], state[head + "out_proj.bias"]
        if head + "dense.weight" in state:
            # out_proj(dense(x)), with no activation between them, is one linear layer.
            dense_weight, dense_bias = state[head + "dense.weight"], state[head + "dense.bias"]
            out_weight, out_bias = out_weight @ dense_weight, out_weight @ dense_bias + out_bias
        weights["classifier.weight"], weights["classifier.bias"] = out_weight, out_bias
    else:
        head = f"classification_heads.{checkpoint.head_name}."
        if xlmr:  # RobertaClassificationHead: dense + tanh + out_proj, as fairseq's
            for part in ("weight", "bias"):
                weights[f"classifier.dense.{part}"] = state[f"{head}dense.{part}"]
                weights[f"classifier.out_proj.{part}"] = state[f"{head}out_proj.{part}"]
        else:  # BERT: the pooler, then the classifier
            for part in ("weight", "bias"):
                weights[f"bert.pooler.dense.{part}"] = state[f"{head}dense.{part}"]
                weights[f"classifier.{part}"] = state[f"{head}out_proj.{part}"]
    return {name: value.contiguous() for name, value in weights.items()}


@torch.no_grad()
def tokenizer_parity_check(
    checkpoint: FairseqCheckpoint, export: TokenizerExport, tolerance: float = 1e-4
) -> Dict[str, float]:
    """fairseq and the exported model on the same batch (each in its own ids); raises
    `hf_parity.ExportMismatch` above `tolerance`."""
    tokens = check_inputs(checkpoint.dictionary, check_positions(checkpoint))
    expected_hidden, expected_logits = fairseq_outputs(checkpoint, tokens)
    hf_tokens = export.hf_ids[tokens]
    real = tokens.ne(checkpoint.dictionary.pad())
    inputs = dict(input_ids=hf_tokens, attention_mask=real.long())
    # As the stock tokenizer returns them: 1 after the first [SEP], 0 on padding (BERT's table;
    # the exported code's own rule). A BERT without a second type row takes none.
    if getattr(export.model.config, "type_vocab_size", 2) > 1:
        is_eos = tokens.eq(checkpoint.dictionary.eos()).long()
        inputs["token_type_ids"] = ((is_eos.cumsum(dim=1) - is_eos) > 0).long() * real.long()
    hidden = export.model.base_model(**inputs).last_hidden_state
    logits = export.model(**inputs).logits
    if checkpoint.kind == MASKED_LM:
        logits = logits[..., export.hf_ids]  # back to fairseq's order
    return checked(
        checkpoint, real, (hidden, logits), (expected_hidden, expected_logits), tolerance
    )
