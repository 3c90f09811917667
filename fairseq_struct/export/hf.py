"""Export a checkpoint of the project to a Hugging Face `transformers` model directory.

    pip install 'fairseq-struct[hf]'        # transformers and safetensors (optional extras)
    python -m fairseq_struct.export.hf checkpoints/bert2d/checkpoint_best.pt hf/bert2d

    from transformers import AutoModel, AutoModelForMaskedLM, AutoTokenizer
    tokenizer = AutoTokenizer.from_pretrained("hf/bert2d", trust_remote_code=True)
    model = AutoModelForMaskedLM.from_pretrained("hf/bert2d", trust_remote_code=True).eval()
    batch = tokenizer(["ev￭ler￭de kal￭dı ."], return_tensors="pt")  # morph mode: segmented text
    logits = model(**batch).logits              # (1, tokens, dictionary)
    encoder = AutoModel.from_pretrained("hf/bert2d", trust_remote_code=True)  # encoder only

Checkpoints (the model and task come from the checkpoint, the dictionary from its data
directory, or from --data):
- masked-LM pretraining (`masked_lm_struct`, fairseq's `masked_lm`) of `bert2d*`, `bert_elmo*` and
  stock `roberta`: the encoder and the masked-LM head (`AutoModelForMaskedLM`; the NSP/SOP head
  "sentence_pair" is left out);
- `sentence_prediction` fine-tuning: the classification head (`AutoModelForSequenceClassification`);
- `token_classification` fine-tuning with `--head softmax|lcrf|lcrf_ner`
  (`AutoModelForTokenClassification`): logits are the per-token scores (the CRF's emissions),
  `model.crf` holds the transitions and `model.decode(...)` gives each word's label (Viterbi,
  and the Entity-Fix rule if fine-tuning used it).

OUT_DIR gets `config.json`, `model.safetensors`, the tokenizer (`vocab.json`: the fairseq
dictionary; `spm.model` for pieces; `tokenizer_config.json`), the code transformers loads with
`trust_remote_code=True` (`configuration_struct_encoder.py`, `modeling_struct_encoder.py`,
`tokenization_struct_encoder.py`; torch and transformers only, no fairseq) and
`fairseq_export.json` (where it came from, what was left out, the parity check).
Stock roberta whose options transformers' own `RobertaForMaskedLM` /
`RobertaForSequenceClassification` computes exactly is written as such (`model_type` "roberta");
everything else uses the exported code. Before writing, the export runs fairseq and the
transformers model on the same batch and stops if they differ (`--no-check` skips that).

An option the exported model cannot compute (quantization noise, spectral norm, sinusoidal
positions, the CSE head, ...) stops the export with an `UnsupportedCheckpoint` error naming it:
an export never computes something else than the checkpoint. Tokenizer limitations (morph-mode
text must be segmented first; word-level text Moses-tokenized) are in
`hf_code/tokenization_struct_encoder.py`.
"""

import argparse
import json
import logging
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
from torch import Tensor

logger = logging.getLogger("fairseq_struct.export.hf")

HF_CODE = Path(__file__).resolve().parent / "hf_code"
CONFIG_MODULE = "configuration_struct_encoder"
MODELING_MODULE = "modeling_struct_encoder"
TOKENIZER_MODULE = "tokenization_struct_encoder"
EXPORT_REPORT = "fairseq_export.json"
INSTALL_HINT = "pip install fairseq-struct[hf]"

MASKED_LM = "masked_lm"
SEQUENCE_CLASSIFICATION = "sequence_classification"
TOKEN_CLASSIFICATION = "token_classification"
TASK_KINDS = {
    "masked_lm_struct": MASKED_LM,
    "masked_lm": MASKED_LM,
    "sentence_prediction": SEQUENCE_CLASSIFICATION,
    "token_classification": TOKEN_CLASSIFICATION,
}
MODEL_CLASSES = {
    MASKED_LM: "StructEncoderForMaskedLM",
    SEQUENCE_CLASSIFICATION: "StructEncoderForSequenceClassification",
    TOKEN_CLASSIFICATION: "StructEncoderForTokenClassification",
}
AUTO_MAP = {
    "AutoConfig": f"{CONFIG_MODULE}.StructEncoderConfig",
    "AutoModel": f"{MODELING_MODULE}.StructEncoderModel",
    "AutoModelForMaskedLM": f"{MODELING_MODULE}.StructEncoderForMaskedLM",
    "AutoModelForSequenceClassification": (
        f"{MODELING_MODULE}.StructEncoderForSequenceClassification"
    ),
    "AutoModelForTokenClassification": f"{MODELING_MODULE}.StructEncoderForTokenClassification",
}
# The activations of fairseq's utils.get_activation_fn that the exported code computes.
ACTIVATIONS = ("relu", "gelu", "gelu_accurate", "gelu_fast", "tanh", "linear")
SUPPORTED_TOKEN_HEADS = ("softmax", "lcrf", "lcrf_ner")


class UnsupportedCheckpoint(ValueError):
    """The checkpoint uses an option the exported model cannot compute."""


class ExportMismatch(RuntimeError):
    """The transformers model does not compute what fairseq computes (the parity check)."""


class MissingExtras(ImportError):
    """transformers (or safetensors) is not installed."""


def require_transformers() -> str:
    """transformers' version; MissingExtras, saying what to install, where it is absent."""
    try:
        import safetensors  # noqa: F401
        import transformers
    except ImportError as error:
        raise MissingExtras(
            f"exporting to Hugging Face needs transformers and safetensors ({error}): "
            f"{INSTALL_HINT}"
        ) from None
    return transformers.__version__


# ----------------------------------------------------------------------------- the checkpoint


@dataclass
class TextUnits:
    """How the run cut text into units: what the tokenizer must reproduce."""

    units: str  # "pieces" or "words"
    spm_model: Optional[Path] = None
    mode: str = "unknown"  # bpe | morph | unknown (no prepare_report.json found)
    lang: Optional[str] = None

    @property
    def segmentation(self) -> Optional[str]:
        if self.mode != "morph":
            return None
        return {"tr": "zemberek", "iu": "morfessor"}.get(self.lang or "", "morphemes")


@dataclass
class FairseqCheckpoint:
    path: Path
    model: Any
    cfg: Any
    task: Any

    @property
    def args(self) -> Any:
        return self.model.args

    @property
    def task_name(self) -> str:
        return self.cfg.task._name

    @property
    def kind(self) -> str:
        if self.task_name not in TASK_KINDS:
            raise UnsupportedCheckpoint(
                f"{self.path}: task {self.task_name!r} cannot be exported (supported: "
                f"{', '.join(sorted(TASK_KINDS))})"
            )
        return TASK_KINDS[self.task_name]

    @property
    def dictionary(self) -> Any:
        return self.task.source_dictionary

    @property
    def sentence_encoder(self) -> Any:
        return self.model.encoder.sentence_encoder

    @property
    def head_name(self) -> Optional[str]:
        if self.kind == MASKED_LM:
            return None
        return self.task.cfg.classification_head_name

    @property
    def data_dir(self) -> Path:
        return Path(str(self.cfg.task.data).split(":")[0])


def load_checkpoint(path: Path, data: Optional[str] = None) -> FairseqCheckpoint:
    """The checkpoint's model (eval mode, CPU), its cfg and its task (whose data directory gives
    the dictionary: the checkpoint's own, or `data`)."""
    from fairseq import checkpoint_utils

    import fairseq_struct  # noqa: F401  (registers the models, tasks and safe globals)

    overrides = {"data": data} if data else {}
    try:
        models, cfg, task = checkpoint_utils.load_model_ensemble_and_task(
            [str(path)], arg_overrides=overrides
        )
    except FileNotFoundError as error:
        raise FileNotFoundError(
            f"{path}: {error} (the dictionary comes from the checkpoint's data directory: "
            "pass --data DIR where it moved)"
        ) from error
    return FairseqCheckpoint(path, models[0].eval(), cfg, task)


def text_units(
    checkpoint: FairseqCheckpoint,
    pretraining_data: Optional[Path] = None,
    spm_model: Optional[Path] = None,
) -> TextUnits:
    """The run's units, SentencePiece model and preparation mode, from the data directories
    that `scripts/prepare-mlm.sh` and `downstream.prepare` wrote (or the options)."""
    from fairseq_struct.models.bert_elmo import BertElmoModel

    finetune_report: Dict[str, Any] = {}
    if (checkpoint.data_dir / "finetune.json").exists():
        finetune_report = json.loads((checkpoint.data_dir / "finetune.json").read_text("utf-8"))
    if pretraining_data is None:
        pretraining_data = Path(finetune_report.get("pretraining_data", checkpoint.data_dir))
    prepare_report: Dict[str, Any] = {}
    report_path = pretraining_data / "text" / "prepare_report.json"
    if report_path.exists():
        prepare_report = json.loads(report_path.read_text("utf-8"))
    words = (
        isinstance(checkpoint.model, BertElmoModel)
        or bool(getattr(checkpoint.cfg.task, "tokens_are_words", False))
        or bool(finetune_report.get("tokens_are_words"))
        or prepare_report.get("units") == "words"
    )
    mode = prepare_report.get("mode", "unknown")
    lang = prepare_report.get("lang")
    if words:
        return TextUnits("words", mode="words", lang=lang)
    spm_model = spm_model or pretraining_data / "spm.model"
    if not spm_model.exists():
        raise FileNotFoundError(
            f"no SentencePiece model at {spm_model}: pass --spm-model (the run's spm.model) or "
            "--pretraining-data (the directory scripts/prepare-mlm.sh wrote)"
        )
    if mode == "unknown":
        logger.warning(
            "%s not found: the tokenizer cannot say whether text must be segmented first",
            report_path,
        )
    return TextUnits("pieces", spm_model, mode, lang)


# ----------------------------------------------------------------------------- options


def _option(args: Any, name: str, default: Any = None) -> Any:
    return getattr(args, name, default)


def check_supported(checkpoint: FairseqCheckpoint) -> None:
    """Raise UnsupportedCheckpoint for every option the exported model would not compute."""
    from fairseq.models.roberta import RobertaModel

    args = checkpoint.args
    where = f"{checkpoint.path}"
    if not isinstance(checkpoint.model, RobertaModel):
        raise UnsupportedCheckpoint(
            f"{where}: --arch {_option(args, 'arch')} is not an encoder of the project "
            "(roberta, bert2d*, bert_elmo*)"
        )
    refused = {
        "quant_noise_pq": "--quant-noise-pq (quantization noise)",
        "quant_noise_scalar": "--quant-noise-scalar (quantization noise)",
        "spectral_norm_classification_head": "--spectral-norm-classification-head",
        "adaptive_input": "--adaptive-input",
    }
    for name, option in refused.items():
        if _option(args, name):
            raise UnsupportedCheckpoint(f"{where}: {option} cannot be exported")
    for name in ("activation_fn", "pooler_activation_fn"):
        value = _option(args, name, "gelu" if name == "activation_fn" else "tanh")
        if value not in ACTIVATIONS:
            option = "--" + name.replace("_", "-")
            raise UnsupportedCheckpoint(
                f"{where}: {option} {value} cannot be exported "
                f"(supported: {', '.join(ACTIVATIONS)})"
            )
    if _option(args, "encoder_xformers_att_config"):
        raise UnsupportedCheckpoint(f"{where}: --encoder-xformers-att-config cannot be exported")
    encoder = checkpoint.sentence_encoder
    if encoder.quant_noise is not None:
        raise UnsupportedCheckpoint(f"{where}: --quant-noise-pq cannot be exported")
    if _is_stock_roberta(checkpoint):
        positions = encoder.embed_positions
        if positions is not None and type(positions).__name__ != "LearnedPositionalEmbedding":
            raise UnsupportedCheckpoint(
                f"{where}: --encoder-learned-pos false (sinusoidal positions) cannot be exported"
            )
    if checkpoint.kind == SEQUENCE_CLASSIFICATION:
        # The exported tokenizer frames text as `<s> A </s>` and pairs as `<s> A </s> B </s>`.
        task_cfg = checkpoint.task.cfg
        if task_cfg.init_token != checkpoint.dictionary.bos():
            raise UnsupportedCheckpoint(
                f"{where}: sentence_prediction with --init-token {task_cfg.init_token} cannot be "
                "exported (the tokenizer starts every text with <s>: --init-token 0)"
            )
        if task_cfg.separator_token is not None and (checkpoint.data_dir / "input1").exists():
            raise UnsupportedCheckpoint(
                f"{where}: sentence pairs with --separator-token {task_cfg.separator_token} "
                "cannot be exported (the tokenizer joins pairs as <s> A </s> B </s>)"
            )
    if checkpoint.kind == TOKEN_CLASSIFICATION:
        head = checkpoint.model.classification_heads[checkpoint.head_name]
        if head.head_type not in SUPPORTED_TOKEN_HEADS:
            raise UnsupportedCheckpoint(
                f"{where}: token-classification --head {head.head_type} cannot be exported "
                f"(supported: {', '.join(SUPPORTED_TOKEN_HEADS)}; CSE's span decoding is not "
                "part of the exported model)"
            )


def _is_stock_roberta(checkpoint: FairseqCheckpoint) -> bool:
    from fairseq_struct.models.struct_roberta import StructRobertaModel

    return not isinstance(checkpoint.model, StructRobertaModel)


def _lm_head_is_tied(checkpoint: FairseqCheckpoint) -> bool:
    embed = checkpoint.sentence_encoder.embed_tokens
    return getattr(embed, "weight", None) is checkpoint.model.encoder.lm_head.weight


def _labels(checkpoint: FairseqCheckpoint) -> Tuple[List[str], Optional[str]]:
    """The names of the head's outputs and the problem type (sentence heads)."""
    head = checkpoint.model.classification_heads[checkpoint.head_name]
    if checkpoint.kind == TOKEN_CLASSIFICATION:
        return list(head.labels), None
    if bool(getattr(checkpoint.task.cfg, "regression_target", False)):
        return ["score"], "regression"
    labels = checkpoint.task.label_dictionary
    classes = head.out_proj.out_features
    # The label dictionary also holds the <mask> that fairseq's task appends: not a class.
    return labels.symbols[labels.nspecial : labels.nspecial + classes], None


# ----------------------------------------------------------------------------- configs


def _uses_native_roberta(checkpoint: FairseqCheckpoint) -> bool:
    """transformers' own Roberta classes compute exactly this checkpoint."""
    if not _is_stock_roberta(checkpoint):
        return False
    args, encoder = checkpoint.args, checkpoint.sentence_encoder
    layer = encoder.layers[0]
    return (
        checkpoint.kind in (MASKED_LM, SEQUENCE_CLASSIFICATION)
        and _option(args, "activation_fn", "gelu") == "gelu"  # RobertaLMHead's fixed gelu
        and _option(args, "pooler_activation_fn", "tanh") == "tanh"  # its classifier's tanh
        and not layer.normalize_before
        and encoder.layernorm_embedding is not None
        and encoder.embed_scale == 1.0
        and encoder.embed_positions is not None
    )


def struct_config(checkpoint: FairseqCheckpoint) -> Any:
    """The StructEncoderConfig of a checkpoint (remote code)."""
    from fairseq_struct.export.hf_code.configuration_struct_encoder import StructEncoderConfig

    args, encoder, dictionary = checkpoint.args, checkpoint.sentence_encoder, checkpoint.dictionary
    layer = encoder.layers[0]
    values = _common_config_values(checkpoint)
    values.update(
        hidden_act=str(_option(args, "activation_fn", "gelu")),
        activation_dropout=layer.activation_dropout_module.p,
        normalize_before=bool(layer.normalize_before),
        layernorm_embedding=encoder.layernorm_embedding is not None,
        embed_scale=float(encoder.embed_scale),
        classifier_activation=str(_option(args, "pooler_activation_fn", "tanh")),
        unk_token_id=dictionary.unk(),
        mask_token_id=_mask_index(dictionary),
    )
    values.update(_position_options(checkpoint))
    values.update(_attention_options(checkpoint))
    values.update(_token_embedding_options(checkpoint))
    if checkpoint.kind == MASKED_LM:
        lm_head = checkpoint.model.encoder.lm_head
        values.update(
            output_vocab_size=lm_head.bias.numel(), tie_lm_head=_lm_head_is_tied(checkpoint)
        )
    if checkpoint.kind == TOKEN_CLASSIFICATION:
        head = checkpoint.model.classification_heads[checkpoint.head_name]
        values.update(
            token_head=str(head.head_type), entity_fix=bool(checkpoint.task.cfg.entity_fix)
        )
    return StructEncoderConfig(**values)


def _mask_index(dictionary: Any) -> Optional[int]:
    return dictionary.indices.get("<mask>")


def _position_options(checkpoint: FairseqCheckpoint) -> Dict[str, Any]:
    encoder = checkpoint.sentence_encoder
    if _is_stock_roberta(checkpoint):
        positions = encoder.embed_positions
        return dict(
            position_embedding="fairseq_learned" if positions is not None else "none",
            max_position_embeddings=(
                positions.num_embeddings if positions is not None else checkpoint.args.max_positions
            ),
            num_segments=0,
        )
    options = encoder.structure_options
    table = encoder.embed_positions.embedding.positions if encoder.embed_positions else None
    return dict(
        position_embedding=options.position_embedding,
        max_position_embeddings=(
            table.num_embeddings if table is not None else encoder.max_source_positions
        ),
        max_intermediate_subwords=options.max_intermediate_subwords,
        subword_id_strategy=options.subword_id_strategy,
        num_segments=options.num_segments,
    )


def _attention_options(checkpoint: FairseqCheckpoint) -> Dict[str, Any]:
    if _is_stock_roberta(checkpoint):
        return {}
    from fairseq_struct.models.struct_encoder import _WholeWordSelfAttention

    encoder = checkpoint.sentence_encoder
    options = encoder.structure_options
    attention = encoder.layers[0].self_attn
    values: Dict[str, Any] = dict(
        relative_positions=options.relative_positions,
        whole_word_attention=options.whole_word_attention,
    )
    if isinstance(attention, _WholeWordSelfAttention):
        wwa = attention.attention
        values.update(
            wwa_window=wwa.window,
            wwa_max_relative_position=wwa.word_relative_positions.max_relative_position,
            relative_positions=0,  # WWA has its own relative positions
        )
    return values


def _token_embedding_options(checkpoint: FairseqCheckpoint) -> Dict[str, Any]:
    embed = checkpoint.sentence_encoder.embed_tokens
    if not hasattr(embed, "embedder"):  # an nn.Embedding table
        if embed.num_embeddings != len(checkpoint.dictionary):
            raise UnsupportedCheckpoint(
                f"{checkpoint.path}: the embedding table has {embed.num_embeddings} rows but the "
                f"dictionary {len(checkpoint.dictionary)} symbols (pass --data with the "
                "dictionary the model was trained with)"
            )
        return dict(token_embedding="table")
    cnn = embed.embedder
    return dict(
        token_embedding="characters",
        char_embed_dim=cnn.char_embed.embedding_dim,
        num_characters=cnn.char_embed.num_embeddings,
        max_word_chars=embed.max_chars,
        char_filters=[[conv.kernel_size[0], conv.out_channels] for conv in cnn.convolutions],
        num_highway=len(cnn.highways),
    )


# ----------------------------------------------------------------------------- weights


def struct_state_dict(checkpoint: FairseqCheckpoint) -> Dict[str, Tensor]:
    """fairseq's parameters under the exported model's names, plus the lookup tables that
    fairseq derives from its dictionary (saved as buffers in the export)."""
    from fairseq_struct.pieces.word_boundaries import special_symbol_lookup, word_start_lookup

    kind, model = checkpoint.kind, checkpoint.model
    tied = checkpoint.kind == MASKED_LM and _lm_head_is_tied(checkpoint)
    stock = _is_stock_roberta(checkpoint)
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


def roberta_config(checkpoint: FairseqCheckpoint) -> Any:
    from transformers import RobertaConfig

    values = _common_config_values(checkpoint)
    values.update(
        hidden_act="gelu",
        max_position_embeddings=checkpoint.sentence_encoder.embed_positions.num_embeddings,
        type_vocab_size=1,
    )
    if checkpoint.kind == MASKED_LM:
        values["tie_word_embeddings"] = _lm_head_is_tied(checkpoint)
    return RobertaConfig(**values)


def _common_config_values(checkpoint: FairseqCheckpoint) -> Dict[str, Any]:
    """What both configurations (remote code and transformers' Roberta) take from a checkpoint
    the same way: sizes, dropouts, special symbols, the source, and a fine-tune's labels."""
    args, encoder, dictionary = checkpoint.args, checkpoint.sentence_encoder, checkpoint.dictionary
    layer = encoder.layers[0]
    values: Dict[str, Any] = dict(
        vocab_size=len(dictionary),
        hidden_size=layer.fc1.in_features,
        num_hidden_layers=len(encoder.layers),
        num_attention_heads=args.encoder_attention_heads,
        intermediate_size=layer.fc1.out_features,
        hidden_dropout_prob=layer.dropout_module.p,
        attention_probs_dropout_prob=_option(args, "attention_dropout", 0.0),
        layer_norm_eps=layer.final_layer_norm.eps,
        classifier_dropout=_option(args, "pooler_dropout", 0.0),
        pad_token_id=dictionary.pad(),
        bos_token_id=dictionary.bos(),
        eos_token_id=dictionary.eos(),
        fairseq_arch=_option(args, "arch"),
        fairseq_task=checkpoint.task_name,
    )
    if checkpoint.kind != MASKED_LM:
        labels, problem_type = _labels(checkpoint)
        values.update(
            id2label=dict(enumerate(labels)),
            label2id={label: index for index, label in enumerate(labels)},
            problem_type=problem_type,
        )
    return values


# ----------------------------------------------------------------------------- building


@dataclass
class HFExport:
    """The transformers model of a checkpoint, ready to save, and what the export left out."""

    model: Any
    native: bool
    left_out: List[str] = field(default_factory=list)


def build_hf_model(checkpoint: FairseqCheckpoint) -> HFExport:
    """The transformers model holding the checkpoint's weights (strictly: every parameter of
    the model is set, every parameter of the checkpoint used or listed in `left_out`)."""
    check_supported(checkpoint)
    left_out = [
        f"classification head {name!r}"
        for name in checkpoint.model.classification_heads
        if name != checkpoint.head_name
    ]
    if checkpoint.kind != MASKED_LM:
        left_out.append("masked-LM head")
    if _uses_native_roberta(checkpoint):
        import transformers

        config = roberta_config(checkpoint)
        cls = {
            MASKED_LM: transformers.RobertaForMaskedLM,
            SEQUENCE_CLASSIFICATION: transformers.RobertaForSequenceClassification,
        }[checkpoint.kind]
        model = cls(config)
        model.load_state_dict(roberta_state_dict(checkpoint, config), strict=True)
        return HFExport(model.eval(), True, left_out)
    from fairseq_struct.export.hf_code import modeling_struct_encoder

    config = struct_config(checkpoint)
    config.auto_map = dict(AUTO_MAP)
    model = getattr(modeling_struct_encoder, MODEL_CLASSES[checkpoint.kind])(config)
    weights = struct_state_dict(checkpoint)
    missing, unexpected = model.load_state_dict(weights, strict=False)
    if missing or unexpected:
        raise UnsupportedCheckpoint(
            f"{checkpoint.path}: the export does not match the checkpoint: missing "
            f"{sorted(missing)}, unexpected {sorted(unexpected)}"
        )
    return HFExport(model.eval(), False, left_out)


# ----------------------------------------------------------------------------- parity check


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
    tokens = check_inputs(checkpoint.dictionary, checkpoint.model.encoder.max_positions())
    expected_hidden, expected_logits = fairseq_outputs(checkpoint, tokens)
    hidden, logits = hf_outputs(export.model, tokens, checkpoint.dictionary.pad())
    real = tokens.ne(checkpoint.dictionary.pad())
    differences = {
        "hidden_states": float((hidden - expected_hidden)[real].abs().max()),
        "logits": float(
            (logits - expected_logits).abs().max()
            if checkpoint.kind == SEQUENCE_CLASSIFICATION
            else (logits - expected_logits)[real].abs().max()
        ),
    }
    for name, difference in differences.items():
        if not difference <= tolerance:
            raise ExportMismatch(
                f"{checkpoint.path}: the exported model's {name} differ from fairseq's by "
                f"{difference:.3g} (> {tolerance}): the export would compute something else"
            )
    return differences


# ----------------------------------------------------------------------------- writing


def write_tokenizer(
    checkpoint: FairseqCheckpoint, units: TextUnits, out_dir: Path, model_max_length: int
) -> None:
    """vocab.json (the dictionary, id order), spm.model, tokenizer_config.json with auto_map, and
    the tokenizer's code."""
    from fairseq_struct.export.hf_code import tokenization_struct_encoder as tokenization

    dictionary = checkpoint.dictionary
    vocab = out_dir / tokenization.VOCAB_FILE
    vocab.write_text(json.dumps(list(dictionary.symbols), ensure_ascii=False), encoding="utf-8")
    specials = dict(
        bos_token=dictionary.bos_word,
        eos_token=dictionary.eos_word,
        unk_token=dictionary.unk_word,
        pad_token=dictionary.pad_word,
        mask_token="<mask>" if _mask_index(dictionary) is not None else None,
        model_max_length=model_max_length,
    )
    if units.units == "words":
        tokenizer = tokenization.StructWordTokenizer(str(vocab), **specials)
        class_name = "StructWordTokenizer"
    else:
        assert units.spm_model is not None
        spm = out_dir / tokenization.SPM_FILE
        shutil.copyfile(units.spm_model, spm)
        tokenizer = tokenization.StructPieceTokenizer(
            str(vocab), str(spm), segmentation=units.segmentation, **specials
        )
        class_name = "StructPieceTokenizer"
    _check_tokenizer_indices(tokenizer, dictionary)
    tokenizer.save_pretrained(str(out_dir))
    config_path = out_dir / "tokenizer_config.json"
    config = json.loads(config_path.read_text("utf-8"))
    config["auto_map"] = {"AutoTokenizer": [f"{TOKENIZER_MODULE}.{class_name}", None]}
    config["tokenizer_class"] = class_name
    config_path.write_text(json.dumps(config, ensure_ascii=False, indent=2) + "\n", "utf-8")
    shutil.copyfile(HF_CODE / f"{TOKENIZER_MODULE}.py", out_dir / f"{TOKENIZER_MODULE}.py")


def _check_tokenizer_indices(tokenizer: Any, dictionary: Any) -> None:
    """The tokenizer must map every symbol to the id fairseq's Dictionary.index gives it."""
    wrong = [
        symbol for symbol, index in dictionary.indices.items() if tokenizer.indices[symbol] != index
    ]
    if wrong or tokenizer.unk_index != dictionary.unk():
        raise UnsupportedCheckpoint(
            f"the dictionary maps symbols listed twice to a later id ({wrong[:5]}): its ids "
            "cannot be reproduced from a symbol list"
        )


def export(
    checkpoint_path: Path,
    out_dir: Path,
    data: Optional[str] = None,
    pretraining_data: Optional[Path] = None,
    spm_model: Optional[Path] = None,
    check: bool = True,
    overwrite: bool = False,
) -> Dict[str, Any]:
    """Write the transformers model directory of a checkpoint; returns the export report."""
    transformers_version = require_transformers()
    out_dir = Path(out_dir)
    if out_dir.exists() and any(out_dir.iterdir()) and not overwrite:
        raise FileExistsError(f"{out_dir} is not empty (pass --overwrite to replace its files)")
    checkpoint = load_checkpoint(Path(checkpoint_path), data)
    units = text_units(checkpoint, pretraining_data, spm_model)
    hf_export = build_hf_model(checkpoint)
    differences = parity_check(checkpoint, hf_export) if check else None
    report = {
        "checkpoint": str(Path(checkpoint_path).resolve()),
        "arch": _option(checkpoint.args, "arch"),
        "task": checkpoint.task_name,
        "exported_as": type(hf_export.model).__name__,
        "remote_code": not hf_export.native,
        "units": units.units,
        "mode": units.mode,
        "segmentation": units.segmentation,
        "left_out": hf_export.left_out,
        "parity_max_abs_difference": differences,
        "transformers_version": transformers_version,
    }
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    # Written into a sibling folder first: a failed export leaves nothing behind, and a new
    # OUT_DIR appears whole (renamed into place).
    staging = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}-"))
    try:
        hf_export.model.save_pretrained(str(staging))
        if not hf_export.native:
            for module in (CONFIG_MODULE, MODELING_MODULE):
                shutil.copyfile(HF_CODE / f"{module}.py", staging / f"{module}.py")
        write_tokenizer(checkpoint, units, staging, int(checkpoint.model.encoder.max_positions()))
        (staging / EXPORT_REPORT).write_text(json.dumps(report, indent=2) + "\n", "utf-8")
        _publish(staging, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return report


def _publish(staging: Path, out_dir: Path) -> None:
    """Move the staged files to OUT_DIR, readable as the user's other files are."""
    umask = os.umask(0)
    os.umask(umask)
    staging.chmod(0o777 & ~umask)  # mkdtemp's folder is private to its owner
    for path in staging.iterdir():
        path.chmod(0o666 & ~umask)  # some writers create their files private too
    if out_dir.exists() and not any(out_dir.iterdir()):
        out_dir.rmdir()
    if not out_dir.exists():
        os.replace(staging, out_dir)
        return
    for path in staging.iterdir():  # --overwrite: file by file
        os.replace(path, out_dir / path.name)


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", type=Path, help="a checkpoint of fairseq-train")
    parser.add_argument("out_dir", type=Path, help="the transformers model directory to write")
    parser.add_argument("--data", help="the run's data directory (default: the checkpoint's)")
    parser.add_argument(
        "--pretraining-data",
        type=Path,
        help="the scripts/prepare-mlm.sh directory of the pretraining run (spm.model, "
        "text/prepare_report.json); default: from the data directory",
    )
    parser.add_argument("--spm-model", type=Path, help="the run's SentencePiece model")
    parser.add_argument(
        "--no-check",
        dest="check",
        action="store_false",
        help="skip comparing fairseq's and the export's outputs before writing",
    )
    parser.add_argument("--overwrite", action="store_true", help="replace files in OUT_DIR")
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    try:
        require_transformers()  # before loading fairseq and the checkpoint
        report = export(
            args.checkpoint,
            args.out_dir,
            data=args.data,
            pretraining_data=args.pretraining_data,
            spm_model=args.spm_model,
            check=args.check,
            overwrite=args.overwrite,
        )
    except (
        MissingExtras,
        UnsupportedCheckpoint,
        ExportMismatch,
        FileNotFoundError,
        FileExistsError,
    ) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(json.dumps(report, indent=2))
    print(f"transformers model in {args.out_dir} (load with trust_remote_code=True)")
    return 0


if __name__ == "__main__":
    from fairseq_struct.fixes.cli_logging import configure_logging

    configure_logging()
    sys.exit(main())
