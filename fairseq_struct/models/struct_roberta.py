"""RoBERTa with the structure-aware encoder: the base of `bert2d` and `bert_elmo`.

A `RobertaModel` subclass whose inner Transformer is `StructTransformerEncoder`, so fairseq's LM
head, classification heads, checkpoint upgrades and hub interface work unchanged.
"""

import logging
from typing import Any, Dict, Optional

from fairseq.models.roberta import RobertaEncoder, RobertaModel
from fairseq.models.roberta.model import RobertaClassificationHead
from fairseq.models.roberta.model import base_architecture as roberta_base_architecture
from fairseq.modules.transformer_sentence_encoder import init_bert_params
from fairseq.utils import safe_getattr
from torch import Tensor, nn

from fairseq_struct.models.struct_encoder import StructTransformerEncoder
from fairseq_struct.modules.structural_position_embedding import (
    POSITION_MODES,
    SUBWORD_STRATEGIES,
)
from fairseq_struct.pieces.word_boundaries import word_start_lookup

logger = logging.getLogger(__name__)

# The sentence-pair (NSP/SOP) head of pretraining; an imported BERT's pooler + NSP layer.
SENTENCE_PAIR_HEAD = "sentence_pair"
# Where an imported BERT's pooler waits for a fine-tuning head (`upgrade_state_dict_named`).
POOLER = "pooler.dense."


class StructRobertaEncoder(RobertaEncoder):
    def __init__(self, args: Any, dictionary: Any, word_starts: Tensor) -> None:
        # Read by build_encoder, which RobertaEncoder calls from inside its __init__.
        self.initial_word_starts = word_starts
        super().__init__(args, dictionary)

    def build_encoder(self, args: Any, dictionary: Any, embed_tokens: Any):
        encoder = StructTransformerEncoder(args, dictionary, embed_tokens, self.initial_word_starts)
        encoder.apply(init_bert_params)
        return encoder

    def forward(
        self,
        src_tokens: Tensor,
        features_only: bool = False,
        return_all_hiddens: bool = False,
        masked_tokens: Optional[Tensor] = None,
        word_starts: Optional[Tensor] = None,
        max_words: Optional[int] = None,
        **unused: Any,
    ):
        x, extra = self.extract_features(
            src_tokens,
            return_all_hiddens=return_all_hiddens,
            word_starts=word_starts,
            max_words=max_words,
        )
        if not features_only:
            x = self.output_layer(x, masked_tokens=masked_tokens)
        return x, extra

    def extract_features(
        self,
        src_tokens: Tensor,
        return_all_hiddens: bool = False,
        word_starts: Optional[Tensor] = None,
        max_words: Optional[int] = None,
        **kwargs: Any,
    ):
        encoder_out = self.sentence_encoder(
            src_tokens,
            return_all_hiddens=return_all_hiddens,
            token_embeddings=kwargs.get("token_embeddings"),
            word_starts=word_starts,
            max_words=max_words,
        )
        features = encoder_out["encoder_out"][0].transpose(0, 1)  # T x B x C -> B x T x C
        inner_states = encoder_out["encoder_states"] if return_all_hiddens else None
        return features, {"inner_states": inner_states}


class StructRobertaModel(RobertaModel):
    """Subclasses set `encoder_class` and register themselves with fairseq."""

    encoder_class = StructRobertaEncoder

    @staticmethod
    def add_args(parser: Any) -> None:
        RobertaModel.add_args(parser)
        parser.add_argument(
            "--position-embedding",
            choices=POSITION_MODES,
            help="absolute positions: 1d (BERT), 2d (BERT2D: word + subword), none",
        )
        parser.add_argument(
            "--max-word-positions",
            type=int,
            metavar="N",
            help="BERT2D: rows of the word position table, when fewer than --max-positions "
            "(the tokens of a sequence; default: as many); a sequence may have more tokens than "
            "words",
        )
        parser.add_argument(
            "--max-intermediate-subwords",
            type=int,
            metavar="M",
            help="BERT2D's M: intermediate subword ids 2..M+1 (paper: 1, 3, 10)",
        )
        parser.add_argument(
            "--subword-id-strategy",
            choices=SUBWORD_STRATEGIES,
            help="BERT2D subword ids of words with more than M intermediate pieces",
        )
        parser.add_argument(
            "--num-segments",
            type=int,
            metavar="N",
            help="segment (token type) embeddings; 2 for NSP/SOP sentence pairs, 0 for none",
        )
        parser.add_argument(
            "--relative-positions",
            type=int,
            metavar="K",
            help="Shaw relative positions clipped at K in every self-attention (0: off)",
        )
        parser.add_argument(
            "--whole-word-attention",
            action="store_true",
            help="Whole-Word Attention (word-level + windowed token attention) in every layer",
        )
        parser.add_argument(
            "--wwa-window", type=int, metavar="W", help="Whole-Word Attention token window"
        )
        parser.add_argument(
            "--restart-word-positions",
            action="store_true",
            help="BERT2D: the second segment of a pair counts its word positions from 0 again "
            "(the published BERT2D checkpoints)",
        )
        parser.add_argument(
            "--layer-norm-eps",
            type=float,
            metavar="EPS",
            help="epsilon of every layer norm (fairseq: 1e-5; BERT: 1e-12)",
        )
        parser.add_argument(
            "--sentence-head-from-pooler",
            action="store_true",
            help="fine-tuning: a new sentence classification head starts from the pretrained "
            "NSP head's pooler (dense + tanh on the first token), as BERT fine-tunes",
        )

    @classmethod
    def build_model(cls, args: Any, task: Any) -> "StructRobertaModel":
        roberta_base_architecture(args)
        if not safe_getattr(args, "max_positions", None):
            args.max_positions = safe_getattr(args, "tokens_per_sample", None) or 512
        word_starts = getattr(task, "word_start_lookup", None)
        if word_starts is None:  # a task of fairseq's own, e.g. sentence_prediction
            word_starts = word_start_lookup(
                task.source_dictionary, safe_getattr(args, "tokens_are_words", False)
            )
        model = cls(args, cls.encoder_class(args, task.source_dictionary, word_starts))
        set_layer_norm_eps(model, safe_getattr(args, "layer_norm_eps", 1e-5))
        return model

    def upgrade_state_dict_named(self, state_dict: Dict[str, Tensor], name: str) -> None:
        """fairseq's upgrade (which drops the checkpoint's heads that this model lacks), after
        taking out an imported BERT's pooler: it starts a new sentence classification head when
        `--sentence-head-from-pooler` asks for it. One-layer heads (`--head-layers 1`) go round
        fairseq's upgrade, which reads a `dense` layer in every head."""
        prefix = name + "." if name else ""
        pooler = {
            part: state_dict.pop(prefix + POOLER + part)
            for part in ("weight", "bias")
            if prefix + POOLER + part in state_dict
        }
        if pooler and safe_getattr(self.args, "sentence_head_from_pooler", False):
            copy_pooler_into_new_heads(self, state_dict, prefix, pooler)
        set_aside = take_out_one_layer_heads(self, state_dict, prefix)
        super().upgrade_state_dict_named(state_dict, name)
        put_back_matching_heads(self, state_dict, prefix, set_aside)


def set_layer_norm_eps(model: nn.Module, eps: float) -> None:
    """fairseq builds every LayerNorm with its default epsilon; BERT's checkpoints used 1e-12."""
    for module in model.modules():
        if isinstance(module, nn.LayerNorm):
            module.eps = eps


def copy_pooler_into_new_heads(
    model: Any, state_dict: Dict[str, Tensor], prefix: str, pooler: Dict[str, Tensor]
) -> None:
    """BERT fine-tunes its pooler (dense + tanh on the first token) under a new classifier: a
    sentence classification head that the checkpoint lacks starts from it (its output layer
    stays new)."""
    for head_name, head in model.classification_heads.items():
        head_prefix = f"{prefix}classification_heads.{head_name}."
        if not isinstance(head, RobertaClassificationHead) or head_prefix + "dense.weight" in (
            state_dict
        ):
            continue
        if head.dense.weight.shape != pooler["weight"].shape:
            continue
        for key, value in head.state_dict().items():
            part = key[len("dense.") :] if key.startswith("dense.") else None
            state_dict[head_prefix + key] = pooler[part].clone() if part in pooler else value


def take_out_one_layer_heads(
    model: Any, state_dict: Dict[str, Tensor], prefix: str
) -> Dict[str, Dict[str, Tensor]]:
    """The checkpoint's heads that lack a dense layer, or whose namesake in the model lacks one,
    taken out of `state_dict` by head name (their keys without the head's prefix)."""
    heads = prefix + "classification_heads."
    names = {key[len(heads) :].split(".")[0] for key in state_dict if key.startswith(heads)}
    set_aside: Dict[str, Dict[str, Tensor]] = {}
    for head_name in sorted(names):
        head_prefix = f"{heads}{head_name}."
        current = model_head(model, head_name)
        saved_has_dense = head_prefix + "dense.weight" in state_dict
        current_has_dense = current is None or getattr(current, "dense", None) is not None
        if saved_has_dense and current_has_dense:
            continue  # fairseq's upgrade reads it
        set_aside[head_name] = {
            key[len(head_prefix) :]: state_dict.pop(key)
            for key in [key for key in state_dict if key.startswith(head_prefix)]
        }
    return set_aside


def put_back_matching_heads(
    model: Any, state_dict: Dict[str, Tensor], prefix: str, set_aside: Dict[str, Dict[str, Tensor]]
) -> None:
    """A set-aside head goes back where the model has a head of its name with the same
    parameters and shapes; otherwise it is dropped, as fairseq drops a head that differs, and
    the model's head keeps its new weights (fairseq's upgrade copied them into `state_dict`)."""
    for head_name, saved in set_aside.items():
        current = model_head(model, head_name)
        if current is None:
            logger.warning(
                "deleting classification head (%s) from checkpoint not present in current model",
                head_name,
            )
            continue
        wanted = {key: value.shape for key, value in current.state_dict().items()}
        if wanted != {key: value.shape for key, value in saved.items()}:
            logger.warning(
                "deleting classification head (%s) from checkpoint with different layers than "
                "current model",
                head_name,
            )
            continue
        for key, value in saved.items():
            state_dict[f"{prefix}classification_heads.{head_name}.{key}"] = value


def model_head(model: Any, head_name: str) -> Optional[nn.Module]:
    heads = model.classification_heads
    return heads[head_name] if head_name in heads else None


def struct_encoder_defaults(args: Any) -> None:
    """Defaults of the structure options (a BERT with 1D positions and full attention)."""
    args.position_embedding = safe_getattr(args, "position_embedding", "1d")
    args.max_intermediate_subwords = safe_getattr(args, "max_intermediate_subwords", 3)
    args.max_word_positions = safe_getattr(args, "max_word_positions", None)
    args.subword_id_strategy = safe_getattr(args, "subword_id_strategy", "uniform")
    args.num_segments = safe_getattr(args, "num_segments", 2)
    args.relative_positions = safe_getattr(args, "relative_positions", 0)
    args.whole_word_attention = safe_getattr(args, "whole_word_attention", False)
    args.wwa_window = safe_getattr(args, "wwa_window", 5)
    args.restart_word_positions = safe_getattr(args, "restart_word_positions", False)
    args.layer_norm_eps = safe_getattr(args, "layer_norm_eps", 1e-5)
    args.sentence_head_from_pooler = safe_getattr(args, "sentence_head_from_pooler", False)


def tiny_encoder_dimensions(args: Any) -> None:
    """Small enough to pretrain in minutes on a CPU (the demo and the tests)."""
    args.encoder_layers = safe_getattr(args, "encoder_layers", 2)
    args.encoder_embed_dim = safe_getattr(args, "encoder_embed_dim", 128)
    args.encoder_ffn_embed_dim = safe_getattr(args, "encoder_ffn_embed_dim", 512)
    args.encoder_attention_heads = safe_getattr(args, "encoder_attention_heads", 4)
    args.max_positions = safe_getattr(args, "max_positions", 128)
