"""Build a registered model from its arch name without a task or data directory (for tests,
benchmarks and notebooks: fairseq's `build_model` only reads the task's dictionaries)."""

from argparse import Namespace
from typing import Any, Optional

import torch
from fairseq.data import Dictionary
from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY, BaseFairseqModel


class _DictionaryTask:
    """The two attributes `build_model` reads from a translation task."""

    def __init__(self, dictionary: Dictionary) -> None:
        self.source_dictionary = dictionary
        self.target_dictionary = dictionary


def joined_dictionary(num_types: int) -> Dictionary:
    """A dictionary of exactly `num_types` entries (fairseq's 4 special symbols included)."""
    dictionary = Dictionary()
    for i in range(num_types - len(dictionary)):
        dictionary.add_symbol(f"w{i}")
    return dictionary


def build_model_from_arch(
    arch: str,
    dictionary: Dictionary,
    seed: Optional[int] = None,
    share_all_embeddings: bool = True,
    **overrides: Any,
) -> BaseFairseqModel:
    """The model of `--arch arch`, with command-line options given as keyword overrides."""
    if seed is not None:
        torch.manual_seed(seed)
    args = Namespace(share_all_embeddings=share_all_embeddings, **overrides)
    ARCH_CONFIG_REGISTRY[arch](args)
    return ARCH_MODEL_REGISTRY[arch].build_model(args, _DictionaryTask(dictionary))
