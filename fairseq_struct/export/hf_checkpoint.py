"""What a checkpoint of the project holds for the export (`export.hf`): its model, task,
dictionary and text units, and whether the exported code computes every option it uses."""

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

logger = logging.getLogger("fairseq_struct.export.hf")

MASKED_LM = "masked_lm"
SEQUENCE_CLASSIFICATION = "sequence_classification"
TOKEN_CLASSIFICATION = "token_classification"
TASK_KINDS = {
    "masked_lm_struct": MASKED_LM,
    "masked_lm": MASKED_LM,
    "sentence_prediction": SEQUENCE_CLASSIFICATION,
    "token_classification": TOKEN_CLASSIFICATION,
}
# The activations of fairseq's utils.get_activation_fn that the exported code computes.
ACTIVATIONS = ("relu", "gelu", "gelu_accurate", "gelu_fast", "tanh", "linear")
SUPPORTED_TOKEN_HEADS = ("softmax", "lcrf", "lcrf_ner")


class UnsupportedCheckpoint(ValueError):
    """The checkpoint uses an option the exported model cannot compute."""


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
    the dictionary: the checkpoint's own, or `data`). The checkpoint's optimizer state is never
    read (`model_checkpoint.load_model`)."""
    from fairseq_struct.model_checkpoint import load_model

    overrides = {"data": data} if data else {}
    if not path.is_file():  # not the dictionary's error below
        raise FileNotFoundError(f"{path}: no such checkpoint file")
    try:
        model, cfg, task = load_model(str(path), overrides)
    except FileNotFoundError as error:
        raise FileNotFoundError(
            f"{path}: {error} (the dictionary comes from the checkpoint's data directory: "
            "pass --data DIR where it moved)"
        ) from error
    return FairseqCheckpoint(path, model.eval(), cfg, task)


def finetune_report(checkpoint: FairseqCheckpoint) -> Dict[str, Any]:
    """The `finetune.json` of a fine-tuned checkpoint's data directory ({} for pretraining)."""
    path = checkpoint.data_dir / "finetune.json"
    return json.loads(path.read_text("utf-8")) if path.exists() else {}


def pretraining_directory(
    checkpoint: FairseqCheckpoint, pretraining_data: Optional[Path] = None
) -> Path:
    """Where the run's units are recorded: the option, else the fine-tuning data's pretraining
    directory, else the checkpoint's own data directory (a pretraining run or an import)."""
    if pretraining_data is not None:
        return pretraining_data
    return Path(finetune_report(checkpoint).get("pretraining_data", checkpoint.data_dir))


def text_units(
    checkpoint: FairseqCheckpoint,
    pretraining_data: Optional[Path] = None,
    spm_model: Optional[Path] = None,
) -> TextUnits:
    """The run's units, SentencePiece model and preparation mode, from the data directories
    that `scripts/prepare-mlm.sh` and `downstream.prepare` wrote (or the options)."""
    from fairseq_struct.models.bert_elmo import BertElmoModel

    fine_tuning = finetune_report(checkpoint)
    pretraining_data = pretraining_directory(checkpoint, pretraining_data)
    prepare_report: Dict[str, Any] = {}
    report_path = pretraining_data / "text" / "prepare_report.json"
    if report_path.exists():
        prepare_report = json.loads(report_path.read_text("utf-8"))
    words = (
        isinstance(checkpoint.model, BertElmoModel)
        or bool(getattr(checkpoint.cfg.task, "tokens_are_words", False))
        or bool(fine_tuning.get("tokens_are_words"))
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


def checkpoint_option(args: Any, name: str, default: Any = None) -> Any:
    return getattr(args, name, default)


def check_supported(checkpoint: FairseqCheckpoint) -> None:
    """Raise UnsupportedCheckpoint for every option the exported model would not compute."""
    from fairseq.models.roberta import RobertaModel

    args = checkpoint.args
    where = f"{checkpoint.path}"
    if not isinstance(checkpoint.model, RobertaModel):
        raise UnsupportedCheckpoint(
            f"{where}: --arch {checkpoint_option(args, 'arch')} is not an encoder of the project "
            "(roberta, bert2d*, bert_elmo*)"
        )
    refused = {
        "quant_noise_pq": "--quant-noise-pq (quantization noise)",
        "quant_noise_scalar": "--quant-noise-scalar (quantization noise)",
        "spectral_norm_classification_head": "--spectral-norm-classification-head",
        "adaptive_input": "--adaptive-input",
    }
    for name, option in refused.items():
        if checkpoint_option(args, name):
            raise UnsupportedCheckpoint(f"{where}: {option} cannot be exported")
    for name in ("activation_fn", "pooler_activation_fn"):
        value = checkpoint_option(args, name, "gelu" if name == "activation_fn" else "tanh")
        if value not in ACTIVATIONS:
            option = "--" + name.replace("_", "-")
            raise UnsupportedCheckpoint(
                f"{where}: {option} {value} cannot be exported "
                f"(supported: {', '.join(ACTIVATIONS)})"
            )
    if checkpoint_option(args, "encoder_xformers_att_config"):
        raise UnsupportedCheckpoint(f"{where}: --encoder-xformers-att-config cannot be exported")
    encoder = checkpoint.sentence_encoder
    if encoder.quant_noise is not None:
        raise UnsupportedCheckpoint(f"{where}: --quant-noise-pq cannot be exported")
    if is_stock_roberta(checkpoint):
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


def is_stock_roberta(checkpoint: FairseqCheckpoint) -> bool:
    from fairseq_struct.models.struct_roberta import StructRobertaModel

    return not isinstance(checkpoint.model, StructRobertaModel)


def lm_head_is_tied(checkpoint: FairseqCheckpoint) -> bool:
    embed = checkpoint.sentence_encoder.embed_tokens
    return getattr(embed, "weight", None) is checkpoint.model.encoder.lm_head.weight


def checkpoint_labels(checkpoint: FairseqCheckpoint) -> Tuple[List[str], Optional[str]]:
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
