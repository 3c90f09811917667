"""What the fine-tuning tasks of the plugin share: the pretraining dictionary and a new head.

They read `input0/dict.txt` of a `downstream.prepare` directory (the pretraining dictionary plus
`<mask>`, so the embedding table has the pretrained size) and put their head among the model's
`classification_heads`, where fairseq's RoBERTa upgrade keeps a new head and drops NSP/SOP's.
"""

from pathlib import Path
from typing import Any

from fairseq.data import Dictionary
from fairseq.tasks import FairseqTask
from fairseq.utils import safe_getattr
from torch import nn


def load_input_dictionary(data: str) -> Dictionary:
    dictionary = Dictionary.load(str(Path(data) / "input0" / "dict.txt"))
    dictionary.add_symbol("<mask>")
    return dictionary


class EncoderFineTuningTask(FairseqTask):
    """A task whose model is a pretrained `RobertaModel` of the project plus one head."""

    def __init__(self, cfg: Any, dictionary: Dictionary) -> None:
        super().__init__(cfg)
        self.dictionary = dictionary

    def build_head(self, embed_dim: int, activation_fn: str, dropout: float) -> nn.Module:
        raise NotImplementedError

    def build_model(self, cfg: Any, from_checkpoint: bool = False) -> Any:
        model = super().build_model(cfg, from_checkpoint)
        if not hasattr(model, "classification_heads"):
            raise ValueError(
                f"--task {self.cfg._name} needs a RobertaModel (roberta, bert2d, bert_elmo)"
            )
        model.classification_heads[self.cfg.classification_head_name] = self.build_head(
            safe_getattr(model.args, "encoder_embed_dim", 768),
            safe_getattr(model.args, "pooler_activation_fn", "tanh"),
            safe_getattr(model.args, "pooler_dropout", 0.0),
        )
        return model

    def max_positions(self) -> int:
        return self.cfg.max_positions

    @property
    def source_dictionary(self) -> Dictionary:
        return self.dictionary

    @property
    def target_dictionary(self) -> Dictionary:
        return self.dictionary
