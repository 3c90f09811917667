"""The work of the export (`export.hf` is the command): build the transformers model of a
checkpoint, check it against fairseq, and write the model directory whole."""

import json
import logging
import shutil
from pathlib import Path
from typing import Any, Dict, Optional

from fairseq_struct.corpus_io import staged_directory
from fairseq_struct.export.hf_checkpoint import (
    FairseqCheckpoint,
    TextUnits,
    UnsupportedCheckpoint,
    checkpoint_option,
    load_checkpoint,
    text_units,
)
from fairseq_struct.export.hf_config import mask_index
from fairseq_struct.export.hf_model import (
    CONFIG_MODULE,
    MODELING_MODULE,
    TOKENIZER_MODULE,
    build_hf_model,
)
from fairseq_struct.export.hf_parity import parity_check
from fairseq_struct.export.hf_tokenizer_units import (
    build_tokenizer_units_model,
    tokenizer_parity_check,
    tokenizer_units_dir,
)

logger = logging.getLogger("fairseq_struct.export.hf")

HF_CODE = Path(__file__).resolve().parent / "hf_code"
EXPORT_REPORT = "fairseq_export.json"
INSTALL_HINT = "pip install fairseq-struct[hf]"


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
        mask_token="<mask>" if mask_index(dictionary) is not None else None,
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
    units_dir = tokenizer_units_dir(checkpoint, pretraining_data)
    if units_dir is not None:  # a Hugging Face tokenizer's units, ids and tokenizer
        exported = build_tokenizer_units_model(checkpoint, units_dir)
        model, native, left_out = exported.model, exported.native, []
        differences = tokenizer_parity_check(checkpoint, exported) if check else None
        units = TextUnits("tokenizer", None, "none")
    else:
        units = text_units(checkpoint, pretraining_data, spm_model)
        hf_export = build_hf_model(checkpoint)
        model, native, left_out = hf_export.model, hf_export.native, hf_export.left_out
        differences = parity_check(checkpoint, hf_export) if check else None
    report = {
        "checkpoint": str(Path(checkpoint_path).resolve()),
        "arch": checkpoint_option(checkpoint.args, "arch"),
        "task": checkpoint.task_name,
        "exported_as": type(model).__name__,
        "remote_code": not native,
        "units": units.units,
        "mode": units.mode,
        "segmentation": units.segmentation,
        "left_out": left_out,
        "parity_max_abs_difference": differences,
        "transformers_version": transformers_version,
    }
    with staged_directory(out_dir) as staging:
        model.save_pretrained(str(staging))
        if not native:
            for module in (CONFIG_MODULE, MODELING_MODULE):
                shutil.copyfile(HF_CODE / f"{module}.py", staging / f"{module}.py")
        if units_dir is not None:
            exported.tokenizer.save_pretrained(str(staging))
        else:
            max_positions = int(checkpoint.model.encoder.max_positions())
            write_tokenizer(checkpoint, units, staging, max_positions)
        (staging / EXPORT_REPORT).write_text(json.dumps(report, indent=2) + "\n", "utf-8")
    return report
