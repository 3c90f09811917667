"""Export of checkpoints whose units are a Hugging Face tokenizer (`export.hf`): an imported
BERTurk, mBERT or XLM-R, fine-tuned or not, or the plugin's `bert` pretrained on WordPiece.

transformers' own classes compute these exactly: BertForMaskedLM /
BertForSequenceClassification / BertForTokenClassification (XLMRobertaFor... for XLM-R), with
the vocabulary back in the tokenizer's order and the tokenizer itself, so the exported directory
is a stock one (no remote code) and an unchanged import gives back the original model's outputs.
The sentence head is BERT's pooler (dense + tanh on the first token) and classifier. BERT's
token classifier is one linear layer: a softmax token head fine-tuned with
`--pooler-activation-fn linear` is two linear layers in a row, which the export multiplies into
one. What these classes cannot compute (2D positions, relative positions, Whole-Word Attention,
a tanh between the token head's layers, the CRF and CSE heads) is refused.
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
from fairseq_struct.export.hf_parity import check_inputs, checked, fairseq_outputs
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


@dataclass
class StockExport:
    model: Any
    tokenizer: Any
    hf_ids: Tensor  # the tokenizer's id of each fairseq symbol


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
    lowercase = bool(report.get("wordpiece", {}).get("lowercase", False))
    return BertTokenizer(
        vocab=str(units_dir / PRETRAINING_REPORT.parent / BERT_VOCABULARY_FILE),  # text/
        do_lower_case=lowercase,
    )


def _is_xlmr(units_dir: Path) -> bool:
    report = units_dir / IMPORT_REPORT
    if not report.exists():
        return False
    return json.loads(report.read_text("utf-8")).get("model_type") in ("xlm-roberta", "roberta")


def check_stock(checkpoint: FairseqCheckpoint) -> None:
    """UnsupportedCheckpoint for what transformers' BERT classes do not compute."""
    from fairseq_struct.models.bert import StructBertModel

    args, where = checkpoint.args, checkpoint.path
    if not isinstance(checkpoint.model, StructBertModel):
        raise UnsupportedCheckpoint(
            f"{where}: --arch {checkpoint_option(args, 'arch')} with a Hugging Face tokenizer's "
            "units cannot be exported yet (only bert: BERTurk, mBERT, XLM-R imports)"
        )
    refused = {
        "relative_positions": "--relative-positions",
        "whole_word_attention": "--whole-word-attention",
        "encoder_normalize_before": "--encoder-normalize-before",
    }
    for name, option in refused.items():
        if checkpoint_option(args, name):
            raise UnsupportedCheckpoint(f"{where}: {option} cannot be exported to BERT")
    if checkpoint_option(args, "position_embedding", "1d") != "1d":
        raise UnsupportedCheckpoint(f"{where}: positions other than 1D cannot be exported yet")
    if checkpoint_option(args, "activation_fn", "gelu") not in ACTIVATIONS:
        raise UnsupportedCheckpoint(f"{where}: --activation-fn cannot be exported to BERT")
    if checkpoint.kind == TOKEN_CLASSIFICATION:
        head = checkpoint.model.classification_heads[checkpoint.head_name]
        if head.head_type != "softmax":
            raise UnsupportedCheckpoint(
                f"{where}: --head {head.head_type} has no transformers class (BERT's token "
                "classifier is a softmax head)"
            )
        if checkpoint_option(args, "pooler_activation_fn", "tanh") != "linear":
            raise UnsupportedCheckpoint(
                f"{where}: BERT's token classifier is one linear layer; fine-tune with "
                "`-- --pooler-activation-fn linear` (finetune.sh) to export a token head"
            )
    if checkpoint.kind == SEQUENCE_CLASSIFICATION and (
        checkpoint_option(args, "pooler_activation_fn", "tanh") != "tanh"
    ):
        raise UnsupportedCheckpoint(f"{where}: a pooler other than tanh is not BERT's")


def build_stock_model(checkpoint: FairseqCheckpoint, units_dir: Path) -> StockExport:
    import transformers

    check_stock(checkpoint)
    tokenizer = _tokenizer(units_dir)
    vocabulary = tokenizer.get_vocab()
    mapping = map_vocabulary(vocabulary, special_tokens(tokenizer), len(vocabulary), units_dir)
    if mapping.symbols != list(checkpoint.dictionary.symbols):
        raise UnsupportedCheckpoint(
            f"{checkpoint.path}: its dictionary is not the vocabulary of {units_dir}'s tokenizer"
        )
    hf_ids = torch.tensor(mapping.hf_ids)
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
    return StockExport(model.eval(), tokenizer, hf_ids)


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
        # out_proj(dense(x)), with no activation between them, is one linear layer.
        head = f"classification_heads.{checkpoint.head_name}."
        dense_weight, dense_bias = state[head + "dense.weight"], state[head + "dense.bias"]
        out_weight, out_bias = state[head + "out_proj.weight"], state[head + "out_proj.bias"]
        weights["classifier.weight"] = out_weight @ dense_weight
        weights["classifier.bias"] = out_weight @ dense_bias + out_bias
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
def stock_parity_check(
    checkpoint: FairseqCheckpoint, export: StockExport, tolerance: float = 1e-4
) -> Dict[str, float]:
    """fairseq and the exported model on the same batch (each in its own ids); raises
    `hf_parity.ExportMismatch` above `tolerance`."""
    tokens = check_inputs(checkpoint.dictionary, checkpoint.model.encoder.max_positions())
    expected_hidden, expected_logits = fairseq_outputs(checkpoint, tokens)
    hf_tokens = export.hf_ids[tokens]
    real = tokens.ne(checkpoint.dictionary.pad())
    segments = torch.zeros_like(tokens)
    if export.model.config.type_vocab_size > 1:  # BERT's token types: 1 after the first [SEP]
        is_eos = tokens.eq(checkpoint.dictionary.eos()).long()
        segments = ((is_eos.cumsum(dim=1) - is_eos) > 0).long() * real.long()
    inputs = dict(input_ids=hf_tokens, attention_mask=real.long(), token_type_ids=segments)
    hidden = export.model.base_model(**inputs).last_hidden_state
    logits = export.model(**inputs).logits
    if checkpoint.kind == MASKED_LM:
        logits = logits[..., export.hf_ids]  # back to fairseq's order
    if checkpoint.kind == SEQUENCE_CLASSIFICATION:
        logits_difference = (logits - expected_logits).abs().max()
    else:
        logits_difference = (logits - expected_logits)[real].abs().max()
    differences = {
        "hidden_states": float((hidden - expected_hidden)[real].abs().max()),
        "logits": float(logits_difference),
    }
    return checked(checkpoint, differences, tolerance)
