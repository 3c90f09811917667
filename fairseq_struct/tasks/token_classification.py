"""Token classification (NER, POS) on a pretrained encoder, with the stock `fairseq-train`.

    fairseq-train data-bin/ner --user-dir fairseq_struct --task token_classification \\
        --criterion token_classification --head lcrf_ner --entity-fix --restore-file CKPT ...

on `fairseq-struct prepare-downstream ner|pos` data; each word's label is predicted on
its first unit (docs/finetuning.md).
"""

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, List, Optional

import numpy as np
from fairseq.data import (
    BaseWrapperDataset,
    Dictionary,
    IdDataset,
    NestedDictionaryDataset,
    NumelDataset,
    NumSamplesDataset,
    RightPadDataset,
    SortDataset,
    data_utils,
)
from fairseq.dataclass import ChoiceEnum, FairseqDataclass
from fairseq.tasks import register_task
from omegaconf import II
from torch import nn

from fairseq_struct.models.struct_roberta import StructRobertaModel
from fairseq_struct.modules.token_classification_heads import HEAD_TYPES, TokenClassificationHead
from fairseq_struct.tasks.encoder_finetuning import EncoderFineTuningTask, load_input_dictionary

logger = logging.getLogger(__name__)

FINETUNE_REPORT = "finetune.json"
METRICS = ("auto", "entity_f1", "accuracy")


@dataclass
class TokenClassificationConfig(FairseqDataclass):
    data: str = field(
        default="", metadata={"help": "directory of fairseq-struct prepare-downstream ner|pos"}
    )
    head: ChoiceEnum(HEAD_TYPES) = field(  # type: ignore[valid-type]
        default="softmax",
        metadata={
            "help": "softmax (one label per word), cse (class-start-end), lcrf (linear-chain "
            "CRF), lcrf_ner (CRF with the learned forbidden-transition penalty of Zöllner et al.)"
        },
    )
    head_layers: int = field(
        default=2,
        metadata={
            "help": "layers of the per-token head: 2, RoBERTa's classification head shape "
            "(dense, --pooler-activation-fn, out_proj); 1, BertForTokenClassification's (one "
            "linear layer); either after --pooler-dropout"
        },
    )
    entity_fix: bool = field(
        default=False,
        metadata={"help": "decode with the Entity-Fix rule (forbidden I-X take the tag before)"},
    )
    metric: ChoiceEnum(METRICS) = field(  # type: ignore[valid-type]
        default="auto",
        metadata={"help": "validation metric; auto: entity_f1 for ner data, accuracy for pos"},
    )
    classification_head_name: str = field(
        default="token_classification_head", metadata={"help": "name of the model's head"}
    )
    max_positions: int = field(default=512, metadata={"help": "longest input in tokens"})
    seed: int = II("common.seed")


def read_finetune_report(data: str) -> dict:
    path = Path(data) / FINETUNE_REPORT
    if not path.exists():
        raise FileNotFoundError(
            f"{path} not found: prepare the data with fairseq-struct prepare-downstream"
        )
    return json.loads(path.read_text(encoding="utf-8"))


class LabelledTokenCount(BaseWrapperDataset):
    """The number of labelled tokens (words) in a batch, counted on the host by the collater:
    the criterion's sample_size, which fairseq's trainer reads back every step."""

    def __init__(self, labels: Any, pad: int) -> None:
        super().__init__(labels)
        self.pad = pad

    def __getitem__(self, index: int) -> int:
        return int(self.dataset[index].ne(self.pad).sum())

    def collater(self, samples: List[int]) -> int:
        return sum(samples)


@register_task("token_classification", dataclass=TokenClassificationConfig)
class TokenClassificationTask(EncoderFineTuningTask):
    cfg: TokenClassificationConfig

    def __init__(self, cfg: TokenClassificationConfig, dictionary: Dictionary, labels: Dictionary):
        super().__init__(cfg, dictionary)
        self.label_dictionary = labels
        report = read_finetune_report(cfg.data)
        metric = cfg.metric
        if metric == "auto":
            metric = "entity_f1" if report.get("task") == "ner" else "accuracy"
        self.metric = metric
        if metric == "entity_f1" or cfg.head in ("cse", "lcrf_ner") or cfg.entity_fix:
            if report.get("task") != "ner":
                raise ValueError(
                    f"--head {cfg.head}, --entity-fix and entity F1 need IOB-tagged NER data; "
                    f"{cfg.data} holds {report.get('task')!r} data"
                )

    @classmethod
    def setup_task(cls, cfg: TokenClassificationConfig, **kwargs: Any) -> "TokenClassificationTask":
        labels = Dictionary.load(str(Path(cfg.data) / "labels" / "dict.txt"))
        return cls(cfg, load_input_dictionary(cfg.data), labels)

    @property
    def labels(self) -> List[str]:
        return self.label_dictionary.symbols[self.label_dictionary.nspecial :]

    def build_head(self, embed_dim: int, activation_fn: str, dropout: float) -> nn.Module:
        return TokenClassificationHead(
            embed_dim,
            embed_dim,
            self.labels,
            self.cfg.head,
            activation_fn,
            dropout,
            layers=self.cfg.head_layers,
        )

    def build_model(self, cfg: Any, from_checkpoint: bool = False) -> Any:
        model = super().build_model(cfg, from_checkpoint)
        if self.cfg.head_layers == 1 and not isinstance(model, StructRobertaModel):
            raise ValueError(
                "--head-layers 1 needs a model of fairseq-struct (bert, bert2d, bert_elmo): "
                "fairseq's own roberta reloads only heads with a dense layer"
            )
        return model

    def load_dataset(self, split: str, combine: bool = False, **kwargs: Any) -> None:
        tokens = self._load(split, "input0", self.dictionary)
        labels = self._load(split, "labels", self.label_dictionary)
        if len(tokens) != len(labels) or not np.array_equal(tokens.sizes, labels.sizes):
            raise ValueError(f"{self.cfg.data}: input0/{split} and labels/{split} do not align")
        dataset = NestedDictionaryDataset(
            {
                "id": IdDataset(),
                "net_input": {
                    "src_tokens": RightPadDataset(tokens, pad_idx=self.dictionary.pad()),
                    "src_lengths": NumelDataset(tokens, reduce=False),
                },
                "target": RightPadDataset(labels, pad_idx=self.label_dictionary.pad()),
                "nsentences": NumSamplesDataset(),
                "ntokens": NumelDataset(tokens, reduce=True),
                "nwords": LabelledTokenCount(labels, self.label_dictionary.pad()),
            },
            sizes=[tokens.sizes],
        )
        with data_utils.numpy_seed(self.cfg.seed):
            shuffle = np.random.permutation(len(tokens))
        self.datasets[split] = SortDataset(dataset, sort_order=[shuffle, tokens.sizes])

    def _load(self, split: str, name: str, dictionary: Dictionary):
        path = str(Path(self.cfg.data) / name / split)
        dataset = data_utils.load_indexed_dataset(path, dictionary)
        if dataset is None:
            raise FileNotFoundError(f"dataset not found: {path}.bin")
        return dataset

    @property
    def target_dictionary(self) -> Dictionary:
        return self.label_dictionary

    def head(self, model: Any) -> Optional[TokenClassificationHead]:
        return model.classification_heads[self.cfg.classification_head_name]
