"""Read a Hugging Face model: its directory (or a hub id, through the Hugging Face cache),
`config.json` and its weights (safetensors or `.bin`, whole or sharded). `.bin` files are
unpickled with `weights_only=True`; every problem is an `ImportFailure` naming the file."""

import json
import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List

import torch
from torch import Tensor

CONFIG_FILE = "config.json"
# In the order transformers prefers them.
WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)
# What a hub download fetches: the config, the weights, the tokenizer (never TF/Flax weights).
HUB_PATTERNS = ["*.json", "*.safetensors", "*.bin", "vocab.txt", "*.model"]


class ImportFailure(Exception):
    """The model cannot be imported; the message names the file and the problem."""


@dataclass
class HFSource:
    directory: Path
    config: Dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.directory)


def resolve_directory(source: str) -> Path:
    """The local directory of `source`: itself, or the hub id's snapshot in the HF cache."""
    path = Path(source)
    if path.is_dir():
        return path
    if path.exists():
        raise ImportFailure(f"{source}: is a file; give the model's directory")
    if source.startswith((".", "/", "~")) or source.count("/") > 1:
        raise ImportFailure(f"{source}: no such directory")
    try:
        from huggingface_hub import constants, snapshot_download

        # Offline (HF_HUB_OFFLINE): only the cache is read, without trying the network first.
        offline = constants.HF_HUB_OFFLINE or os.environ.get("HF_HUB_OFFLINE", "0") not in ("", "0")
        return Path(
            snapshot_download(repo_id=source, allow_patterns=HUB_PATTERNS, local_files_only=offline)
        )
    except Exception as error:  # offline, unknown id, gated model, network errors
        raise ImportFailure(
            f"{source}: not a local directory, and the Hugging Face hub gave no copy of it "
            f"({type(error).__name__}: {first_line(error)}). Without network, download it once "
            f"elsewhere (huggingface-cli download {source} --local-dir DIR) and pass DIR"
        ) from None


def open_source(source: str) -> HFSource:
    directory = resolve_directory(source)
    config_path = directory / CONFIG_FILE
    if not config_path.exists():
        raise ImportFailure(f"{config_path}: not found (a Hugging Face model has a config.json)")
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise ImportFailure(f"{config_path}: not valid JSON ({error})") from None
    return HFSource(directory, config)


def weight_files(directory: Path) -> List[Path]:
    """The files that hold the model's weights (the shards of an index)."""
    for name in WEIGHT_FILES:
        path = directory / name
        if not path.exists():
            continue
        if not name.endswith(".index.json"):
            return [path]
        try:
            weight_map = json.loads(path.read_text(encoding="utf-8"))["weight_map"]
        except (ValueError, KeyError, UnicodeDecodeError) as error:
            raise ImportFailure(f"{path}: not a weight index ({error})") from None
        return [directory / shard for shard in dict.fromkeys(weight_map.values())]
    raise ImportFailure(f"{directory}: no weights ({', '.join(WEIGHT_FILES)})")


def _read_weights(path: Path) -> Dict[str, Tensor]:
    if not path.exists():
        raise ImportFailure(f"{path}: not found (named by the weight index)")
    try:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file

            return load_file(str(path))
        state = torch.load(str(path), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as error:  # weights_only refused something that is no tensor
        refused = next(
            (line for line in str(error).splitlines() if "Unsupported global" in line), ""
        )
        raise ImportFailure(
            f"{path}: holds more than tensors, which are all a checkpoint may hold here "
            f"(torch.load with weights_only: {refused.strip() or first_line(error)})"
        ) from None
    except Exception as error:  # truncated or corrupt files raise many kinds of errors
        raise ImportFailure(
            f"{path}: cannot be read as weights ({type(error).__name__}: {first_line(error)}); "
            "the file may be truncated: download it again"
        ) from None
    if not isinstance(state, dict) or not all(isinstance(v, Tensor) for v in state.values()):
        raise ImportFailure(f"{path}: holds no state dict of tensors")
    return state


def first_line(error: Exception) -> str:
    """A library's error message in one line (some span a page)."""
    return next((line.strip() for line in str(error).splitlines() if line.strip()), "")


def load_weights(directory: Path) -> Dict[str, Tensor]:
    """Every weight of the model, by its name in the checkpoint."""
    weights: Dict[str, Tensor] = {}
    for path in weight_files(directory):
        weights.update(_read_weights(path))
    return weights
