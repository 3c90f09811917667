"""The transformers model of a checkpoint (`export.hf`): its config and weights in transformers' own
roberta classes where they compute the checkpoint exactly, in the exported code (hf_code/)
otherwise."""

from dataclasses import dataclass, field
from typing import Any, List

from fairseq_struct.export.hf_checkpoint import (
    MASKED_LM,
    SEQUENCE_CLASSIFICATION,
    TOKEN_CLASSIFICATION,
    FairseqCheckpoint,
    UnsupportedCheckpoint,
    check_supported,
)
from fairseq_struct.export.hf_config import roberta_config, struct_config, uses_native_roberta
from fairseq_struct.export.hf_weights import roberta_state_dict, struct_state_dict

CONFIG_MODULE = "configuration_struct_encoder"
MODELING_MODULE = "modeling_struct_encoder"
TOKENIZER_MODULE = "tokenization_struct_encoder"

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
    if uses_native_roberta(checkpoint):
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
