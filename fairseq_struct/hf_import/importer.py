"""The work of the import (`hf_import.cli` is the command): read a Hugging Face model, place
every weight in a checkpoint of the plugin, map its vocabulary and write OUT_DIR whole."""

import json
import logging
import os
import warnings
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Dict, List
from unittest.mock import patch

from fairseq_struct.corpus_io import staged_directory
from fairseq_struct.hf_import.directory import CHECKPOINT_FILE, HF_TOKENIZER_DIR, REPORT_FILE
from fairseq_struct.hf_import.layouts import (
    FairseqLayout,
    bert2d_token_limit,
    fairseq_layout,
    model_kind,
)
from fairseq_struct.hf_import.source import ImportFailure, load_weights, open_source
from fairseq_struct.hf_import.vocabulary import (
    describe_disagreement,
    load_tokenizer,
    vocabulary_files_disagreement,
    word_start_convention,
)
from fairseq_struct.pieces.hf_tokenizer import (
    TOKENIZER_FILE,
    map_vocabulary,
    special_tokens,
)

logger = logging.getLogger("fairseq_struct.hf_import")

TOKENIZER_CONFIG = "tokenizer_config.json"


def _tokenizer_config(directory: Path) -> Dict[str, Any]:
    path = directory / TOKENIZER_CONFIG
    if not path.exists():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise ImportFailure(f"{path}: not valid JSON ({error})") from None


def fairseq_arguments(data_dir: Path, layout: FairseqLayout, tokens: int) -> List[str]:
    """fairseq-train's arguments that build the imported model as a masked-LM run."""
    import fairseq_struct

    fairseq_struct.register()

    arguments = [
        str(data_dir),
        "--user-dir",
        os.path.dirname(fairseq_struct.__file__),
        "--task",
        "masked_lm_struct",
        "--criterion",
        "masked_lm_struct",
        "--tokens-per-sample",
        str(tokens),
        *layout.arguments(),
    ]
    if layout.has_sentence_pair_head:
        arguments += ["--sentence-objective", "nsp"]
    return arguments


def fairseq_checkpoint(arguments: List[str], weights: Dict[str, Any], where: Path) -> Dict:
    """The checkpoint fairseq-train would write for these weights, after checking that they are
    exactly the model's: every parameter present, each of its shape, and nothing else."""
    import torch
    from fairseq import options, tasks
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from omegaconf import OmegaConf

    parser = options.get_training_parser()
    with warnings.catch_warnings():  # hydra's deprecation notices about fairseq's own configs
        warnings.simplefilter("ignore", UserWarning)
        cfg = convert_namespace_to_omegaconf(options.parse_args_and_arch(parser, arguments))
    task = tasks.setup_task(cfg.task)
    # Shapes only, on the meta device: no second copy of the weights. fairseq's initialisation
    # reads the weights' data, which meta tensors lack, so it is left out here.
    with torch.device("meta"), ExitStack() as stack:
        for module in ("fairseq.models.roberta.model", "fairseq_struct.models.struct_roberta"):
            stack.enter_context(patch(f"{module}.init_bert_params", lambda module: None))
        model = task.build_model(cfg.model)
    expected = model.state_dict()
    weights = dict(weights)
    for name, value in expected.items():
        if name.endswith(".version"):
            weights[name] = torch.ones_like(value, device="cpu")  # fairseq's format marker
    missing = sorted(set(expected) - set(weights))
    unexpected = sorted(set(weights) - set(expected) - {k for k in weights if "pooler" in k})
    wrong = [
        f"{name} {tuple(weights[name].shape)} != {tuple(expected[name].shape)}"
        for name in sorted(set(expected) & set(weights))
        if weights[name].shape != expected[name].shape
    ]
    if missing or unexpected or wrong:
        raise ImportFailure(
            f"{where}: the converted weights do not fit the fairseq model (missing: "
            f"{missing[:5]}, unexpected: {unexpected[:5]}, shapes: {wrong[:5]})"
        )
    return {
        "args": None,
        "cfg": OmegaConf.to_container(cfg, resolve=True, enum_to_str=True),
        "model": weights,
        "criterion": None,
        "optimizer_history": [
            {
                "criterion_name": "MaskedLMStructCriterion",
                "optimizer_name": "none",
                "lr_scheduler_state": {"best": None},
                "num_updates": 0,
            }
        ],
        "task_state": {},
        "extra_state": {
            "train_iterator": {"epoch": 1, "iterations_in_epoch": 0},
            "previous_training_time": 0,
        },
        "last_optimizer_state": None,
    }


def import_model(source_name: str, out_dir: Path, lang: str = "tr") -> Dict[str, Any]:
    """Write OUT_DIR for the Hugging Face model SOURCE_NAME; returns the import report."""
    import torch

    out_dir = Path(out_dir)
    if out_dir.exists() and (not out_dir.is_dir() or any(out_dir.iterdir())):
        raise ImportFailure(f"{out_dir}: exists and is not empty; remove it or choose another")
    source = open_source(source_name)
    weights = load_weights(source.directory)
    kind = model_kind(source, set(weights))
    tokenizer = load_tokenizer(source, kind)
    disagreement = vocabulary_files_disagreement(source.directory, tokenizer)
    if disagreement is not None:
        message = describe_disagreement(source.directory, disagreement)
        logger.warning(message)
        warnings.warn(message, UserWarning, stacklevel=2)
    embedding_key = next(
        (key for key in weights if key.endswith("embeddings.word_embeddings.weight")), None
    )
    if embedding_key is None:
        raise ImportFailure(f"{source.directory}: the weight embeddings.word_embeddings is missing")
    mapping = map_vocabulary(
        tokenizer.get_vocab(),
        special_tokens(tokenizer),
        weights[embedding_key].shape[0],
        source.directory,
    )
    convention = word_start_convention(mapping.symbols, kind, source.directory)
    layout = fairseq_layout(
        source,
        kind,
        weights,
        mapping.hf_ids,
        int(tokenizer.pad_token_id),
        _tokenizer_config(source.directory),
    )
    del weights
    token_limit_source = "the position table"
    if kind == "bert2d":
        # The source's own limit in tokens: its word table (--max-word-positions) bounds the
        # words of a sequence, which has more tokens than words.
        tokens, token_limit_source = bert2d_token_limit(source, tokenizer)
        layout.options["max_positions"] = tokens
    else:
        # Tokens per sequence: at most BERT's 512, and no more than the position table has rows.
        tokens = min(
            int(source.config.get("max_position_embeddings", 512)),
            512,
            layout.options["max_positions"],
        )
    report = {
        "source": source_name,
        "source_directory": str(source.directory.resolve()),
        "model_type": source.config.get("model_type"),
        "architectures": source.config.get("architectures"),
        "arch": layout.arch,
        "options": layout.options,
        "units": "tokenizer",
        "lang": lang,
        "word_starts": convention,
        "special_tokens": mapping.special_names,
        "vocabulary": len(mapping.symbols),
        "tokens_per_sample": tokens,
        "tokens_per_sample_from": token_limit_source,
        "vocabulary_files_disagree": disagreement,
        "sentence_pair_head": layout.has_sentence_pair_head,
        "pooler": layout.has_pooler,
        "notes": layout.notes,
        "checkpoint": CHECKPOINT_FILE,
    }
    with staged_directory(out_dir) as staging:
        (staging / "dict.txt").write_text("\n".join(mapping.dictionary_lines()) + "\n", "utf-8")
        (staging / TOKENIZER_FILE).write_text(tokenizer.backend_tokenizer.to_str(), "utf-8")
        tokenizer.save_pretrained(str(staging / HF_TOKENIZER_DIR))
        checkpoint = fairseq_checkpoint(
            fairseq_arguments(staging, layout, tokens), layout.weights, source.directory
        )
        # The data directory is OUT_DIR once the staging directory is renamed into place.
        checkpoint["cfg"]["task"]["data"] = str(out_dir.resolve())
        checkpoint["cfg"]["model"].data = str(out_dir.resolve())
        # Each tensor once (a tied decoder is the token table), fairseq's version markers aside.
        distinct = {
            value.data_ptr(): value.numel()
            for key, value in checkpoint["model"].items()
            if not key.endswith(".version")
        }
        report["parameters"] = sum(distinct.values())
        torch.save(checkpoint, staging / CHECKPOINT_FILE)
        (staging / REPORT_FILE).write_text(json.dumps(report, indent=2) + "\n", "utf-8")
    return report
