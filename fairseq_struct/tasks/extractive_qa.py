"""Extractive question answering (SQuAD v1.1, TQuAD) on a pretrained encoder (design.md §5.4).

    fairseq-train data-bin/qa --user-dir fairseq_struct --task extractive_qa \\
        --criterion extractive_qa --max-answer-length 64 --restore-file CKPT ...

on `fairseq-struct prepare-downstream qa` windows; validation answers each question
with the best span of its best-scoring window and scores EM / F1 as SQuAD v1.1 does
(docs/finetuning.md).
"""

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List

import numpy as np
import torch
from fairseq.data import FairseqDataset, data_utils
from fairseq.dataclass import FairseqDataclass
from fairseq.tasks import register_task
from omegaconf import II
from torch import nn

from fairseq_struct.modules.token_classification_heads import SpanExtractionHead
from fairseq_struct.tasks.encoder_finetuning import EncoderFineTuningTask, load_input_dictionary

logger = logging.getLogger(__name__)


@dataclass
class ExtractiveQAConfig(FairseqDataclass):
    data: str = field(
        default="", metadata={"help": "directory of fairseq-struct prepare-downstream qa"}
    )
    max_answer_length: int = field(
        default=64, metadata={"help": "longest answer in tokens (BERT2D paper, Table 2: 64)"}
    )
    classification_head_name: str = field(
        default="span_extraction_head", metadata={"help": "name of the model's head"}
    )
    max_positions: int = field(default=512, metadata={"help": "longest input in tokens"})
    seed: int = II("common.seed")


class QAWindowDataset(FairseqDataset):
    """Windows of a split with their targets, and the text needed to score their answers."""

    def __init__(self, tokens: Any, spans: Any, metadata: Dict[str, Any], pad: int) -> None:
        super().__init__()
        self.tokens = tokens
        self.spans = spans
        self.windows = metadata["features"]
        self.questions = metadata["questions"]
        self.contexts = metadata["contexts"]
        self.pad = pad
        if len(self.windows) != len(tokens) or len(spans) != len(tokens):
            raise ValueError("QA windows, tokens and spans differ in number")

    def __getitem__(self, index: int) -> Dict[str, Any]:
        return {"id": index, "tokens": self.tokens[index], "span": self.spans[index]}

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def sizes(self) -> np.ndarray:
        return self.tokens.sizes

    def num_tokens(self, index: int) -> int:
        return int(self.tokens.sizes[index])

    def size(self, index: int) -> int:
        return int(self.tokens.sizes[index])

    def ordered_indices(self) -> np.ndarray:
        return np.argsort(self.tokens.sizes, kind="mergesort")

    def window(self, index: int) -> Dict[str, Any]:
        """Question id, context text, gold answers and character spans of a window's units."""
        window = self.windows[index]
        question = self.questions[window["question"]]
        return {
            "question": window["question"],
            "context": self.contexts[question["context"]],
            "answers": question["answers"],
            "context_offset": window["context_offset"],
            "spans": window["spans"],
        }

    def collater(self, samples: List[Dict[str, Any]]) -> Dict[str, Any]:
        if not samples:
            return {}
        tokens = data_utils.collate_tokens([s["tokens"] for s in samples], self.pad)
        spans = torch.stack([s["span"] for s in samples]).long()
        ids = [s["id"] for s in samples]
        return {
            "id": torch.tensor(ids),
            "nsentences": len(samples),
            "ntokens": sum(len(s["tokens"]) for s in samples),
            "net_input": {
                "src_tokens": tokens,
                "src_lengths": torch.tensor([len(s["tokens"]) for s in samples]),
            },
            "start_positions": spans[:, 0],
            "end_positions": spans[:, 1],
            "windows": [self.window(index) for index in ids],
        }


@register_task("extractive_qa", dataclass=ExtractiveQAConfig)
class ExtractiveQATask(EncoderFineTuningTask):
    cfg: ExtractiveQAConfig

    @classmethod
    def setup_task(cls, cfg: ExtractiveQAConfig, **kwargs: Any) -> "ExtractiveQATask":
        return cls(cfg, load_input_dictionary(cfg.data))

    def build_head(self, embed_dim: int, activation_fn: str, dropout: float) -> nn.Module:
        return SpanExtractionHead(embed_dim, embed_dim, activation_fn, dropout)

    def load_dataset(self, split: str, combine: bool = False, **kwargs: Any) -> None:
        data = Path(self.cfg.data)
        tokens = data_utils.load_indexed_dataset(str(data / "input0" / split), self.dictionary)
        spans = data_utils.load_indexed_dataset(str(data / "spans" / split), None)
        if tokens is None or spans is None:
            raise FileNotFoundError(f"dataset not found: {data}/input0/{split}.bin")
        metadata = json.loads((data / f"{split}.qa.json").read_text(encoding="utf-8"))
        self.datasets[split] = QAWindowDataset(tokens, spans, metadata, self.dictionary.pad())
