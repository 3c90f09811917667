"""Which Hugging Face models import, as which fairseq architecture, and where each weight goes
(the table in docs/finetuning.md, "Start from a published encoder"). Every weight is accounted
for: one the layout does not place, or one it needs and the checkpoint lacks, stops the import."""

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set, Tuple

import torch
from torch import Tensor

from fairseq_struct.hf_import.source import HFSource, ImportFailure

SUPPORTED = (
    "BERT (BertModel, BertForMaskedLM, BertForPreTraining: BERTurk, mBERT), the published "
    "BERT2D layout (Bert2DModel, Bert2DForMaskedLM, Bert2DForPreTraining) and XLM-R / RoBERTa "
    "with SentencePiece pieces (XLMRobertaModel, XLMRobertaForMaskedLM, RobertaForMaskedLM)"
)
ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_accurate", "relu": "relu", "tanh": "tanh"}
BERT2D_STRATEGIES = ("uniform", "leftover_as_last")
# Buffers that some checkpoints carry and no model needs.
IGNORED_SUFFIXES = ("embeddings.position_ids", "embeddings.token_type_ids")

ENCODER = "encoder.sentence_encoder."
LAYER_WEIGHTS = {
    "attention.self.query": "self_attn.q_proj",
    "attention.self.key": "self_attn.k_proj",
    "attention.self.value": "self_attn.v_proj",
    "attention.output.dense": "self_attn.out_proj",
    "attention.output.LayerNorm": "self_attn_layer_norm",
    "intermediate.dense": "fc1",
    "output.dense": "fc2",
    "output.LayerNorm": "final_layer_norm",
}


def model_kind(source: HFSource, keys: Set[str]) -> str:
    """ "bert", "bert2d" or "xlmr"; an ImportFailure naming what is supported otherwise."""
    model_type = str(source.config.get("model_type", "")).replace("_", "").replace("-", "")
    if model_type == "bert2d" or any(".whole_word_embeddings." in key for key in keys):
        return "bert2d"
    if model_type == "bert":
        return "bert"
    if model_type in ("xlmroberta", "roberta"):
        return "xlmr"
    architectures = ", ".join(source.config.get("architectures") or []) or "none named"
    raise ImportFailure(
        f"{source.directory / 'config.json'}: model_type {source.config.get('model_type')!r} "
        f"({architectures}) cannot be imported; supported: {SUPPORTED}"
    )


@dataclass
class FairseqLayout:
    """The fairseq model an import builds and the weights it holds."""

    arch: str
    options: Dict[str, Any]
    weights: Dict[str, Tensor]
    has_sentence_pair_head: bool
    has_pooler: bool
    notes: List[str] = field(default_factory=list)

    def arguments(self) -> List[str]:
        """fairseq-train options that build this model (with `--arch`)."""
        arguments = ["--arch", self.arch]
        for name, value in self.options.items():
            flag = "--" + name.replace("_", "-")
            if isinstance(value, bool):
                arguments += [flag] if value else []
            else:
                arguments += [flag, str(value)]
        return arguments


class _Weights:
    """The checkpoint's weights, taken one by one, so that what is left can be reported."""

    def __init__(self, weights: Dict[str, Tensor], where: str) -> None:
        self.where = where
        self.remaining = {
            _modern_name(key): value
            for key, value in weights.items()
            if not key.endswith(IGNORED_SUFFIXES)
        }
        self.base = _base_prefix(self.remaining)

    def has(self, name: str, base: bool = True) -> bool:
        return (self.base + name if base else name) in self.remaining

    def take(self, name: str, base: bool = True) -> Tensor:
        key = self.base + name if base else name
        if key not in self.remaining:
            raise ImportFailure(f"{self.where}: the weight {key!r} is missing")
        return self.remaining.pop(key)

    def take_optional(self, name: str, base: bool = True) -> Optional[Tensor]:
        return self.take(name, base) if self.has(name, base) else None

    def check_all_taken(self) -> None:
        if self.remaining:
            names = sorted(self.remaining)
            shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
            raise ImportFailure(
                f"{self.where}: {len(names)} weights this importer does not know where to put: "
                f"{shown}"
            )


def _modern_name(key: str) -> str:
    """TF-era checkpoints name LayerNorm's parameters gamma and beta."""
    if key.endswith(".gamma"):
        return key[: -len("gamma")] + "weight"
    if key.endswith(".beta"):
        return key[: -len("beta")] + "bias"
    return key


def _base_prefix(weights: Dict[str, Tensor]) -> str:
    for prefix in ("bert2d.", "bert.", "roberta.", ""):
        if prefix + "embeddings.word_embeddings.weight" in weights:
            return prefix
    return ""


def _config(source: HFSource, name: str, default: Any = None) -> Any:
    value = source.config.get(name, default)
    if value is None:
        raise ImportFailure(f"{source.directory / 'config.json'}: {name!r} is missing")
    return value


def encoder_options(source: HFSource) -> Dict[str, Any]:
    """The fairseq options of the encoder's dimensions and regularisation."""
    where = source.directory / "config.json"
    activation = _config(source, "hidden_act", "gelu")
    if activation not in ACTIVATIONS:
        raise ImportFailure(f"{where}: hidden_act {activation!r} is not supported")
    position_type = source.config.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise ImportFailure(
            f"{where}: position_embedding_type {position_type!r} is not supported (absolute only)"
        )
    if source.config.get("is_decoder") or source.config.get("add_cross_attention"):
        raise ImportFailure(f"{where}: a decoder (is_decoder, cross-attention) is not supported")
    return {
        "encoder_layers": int(_config(source, "num_hidden_layers")),
        "encoder_embed_dim": int(_config(source, "hidden_size")),
        "encoder_ffn_embed_dim": int(_config(source, "intermediate_size")),
        "encoder_attention_heads": int(_config(source, "num_attention_heads")),
        "activation_fn": ACTIVATIONS[activation],
        "dropout": float(source.config.get("hidden_dropout_prob", 0.1)),
        "attention_dropout": float(source.config.get("attention_probs_dropout_prob", 0.1)),
        "layer_norm_eps": float(source.config.get("layer_norm_eps", 1e-12)),
    }


def bert2d_subword_strategy(source: HFSource, tokenizer_config: Dict[str, Any]) -> str:
    """The authors' tokenizer arguments (newer code) or config fields (older code)."""
    where = source.directory
    merged = {**source.config, **tokenizer_config}
    order = merged.get("subword_embedding_order", "ending_first")
    if order != "ending_first":
        raise ImportFailure(f"{where}: subword_embedding_order {order!r} (only ending_first)")
    strategy = merged.get("intermediate_subword_distribution_strategy", "uniform")
    if strategy not in BERT2D_STRATEGIES:
        raise ImportFailure(
            f"{where}: intermediate_subword_distribution_strategy {strategy!r} is not one of "
            f"{', '.join(BERT2D_STRATEGIES)}"
        )
    return strategy


# The token limit of BERT's config when its config.json names none (transformers' default).
BERT_DEFAULT_TOKENS = 512
# transformers' model_max_length of a tokenizer that names no limit (VERY_LARGE_INTEGER, 1e30).
UNLIMITED = 10**12


def bert2d_token_limit(source: HFSource, tokenizer: Any) -> Tuple[int, str]:
    """The most tokens a sequence of the published BERT2D may have, and where that was read: its
    config's `max_position_embeddings` (the token-level tables that transformers' BERT-derived
    model sizes by it and enforces), else the tokenizer's `model_max_length` (where it names
    one), else BertConfig's default, 512. Not the word table's rows: a sequence has more tokens
    than words."""
    configured = source.config.get("max_position_embeddings")
    if configured is not None:
        return int(configured), "config.json max_position_embeddings"
    length = getattr(tokenizer, "model_max_length", None)
    if isinstance(length, int) and 0 < length < UNLIMITED:
        return length, "the tokenizer's model_max_length"
    return BERT_DEFAULT_TOKENS, "BertConfig's default (no limit named by config or tokenizer)"


def fairseq_layout(
    source: HFSource,
    kind: str,
    weights: Dict[str, Tensor],
    hf_ids: List[int],
    pad_id: int,
    tokenizer_config: Dict[str, Any],
) -> FairseqLayout:
    """The fairseq architecture, options and state dict of the imported model."""
    taken = _Weights(weights, str(source.directory))
    options = encoder_options(source)
    state: Dict[str, Tensor] = {}
    order = torch.tensor(hf_ids)

    embeddings = taken.take("embeddings.word_embeddings.weight")
    lm_head = _masked_lm_head(taken, order, embeddings)  # compares the tied decoder first
    state[ENCODER + "embed_tokens.weight"] = rows_in_order(embeddings, order)
    token_types = taken.take("embeddings.token_type_embeddings.weight")
    options["num_segments"] = token_types.shape[0]
    state[ENCODER + "embed_positions.embedding.segments.weight"] = token_types
    for part in ("weight", "bias"):
        state[ENCODER + f"layernorm_embedding.{part}"] = taken.take(f"embeddings.LayerNorm.{part}")

    positions_key = ENCODER + "embed_positions.embedding.positions.weight"
    if kind == "bert2d":
        words = taken.take("embeddings.whole_word_embeddings.weight")
        subwords = taken.take("embeddings.subword_embeddings.weight")
        if subwords.shape[0] < 3:
            raise ImportFailure(
                f"{source.directory}: subword_embeddings has {subwords.shape[0]} rows; BERT2D "
                "needs M + 2 >= 3"
            )
        configured = source.config.get(
            "max_intermediate_subword_position_embeddings",
            source.config.get("subword_intermediate_position_embeddings"),
        )
        if configured is not None and int(configured) + 2 != subwords.shape[0]:
            raise ImportFailure(
                f"{source.directory / 'config.json'}: M = {configured} intermediate subword "
                f"positions, but subword_embeddings has {subwords.shape[0]} rows (M + 2 expected)"
            )
        state[positions_key] = words
        state[ENCODER + "embed_positions.embedding.subword_positions.weight"] = subwords
        options.update(
            position_embedding="2d",
            # Rows of the word table; the import sets --max-positions, the tokens of a sequence
            # (`bert2d_token_limit`), which are more than its words.
            max_positions=words.shape[0],
            max_word_positions=words.shape[0],
            max_intermediate_subwords=subwords.shape[0] - 2,
            subword_id_strategy=bert2d_subword_strategy(source, tokenizer_config),
            restart_word_positions=True,
        )
        arch = "bert2d"
    else:
        table = taken.take("embeddings.position_embeddings.weight")
        # RoBERTa's position of the first token is padding_idx + 1.
        first = pad_id + 1 if kind == "xlmr" else 0
        state[positions_key] = table[first:].clone()
        options.update(position_embedding="1d", max_positions=table.shape[0] - first)
        arch = "bert"

    for layer in range(options["encoder_layers"]):
        for hf_name, fairseq_name in LAYER_WEIGHTS.items():
            for part in ("weight", "bias"):
                state[ENCODER + f"layers.{layer}.{fairseq_name}.{part}"] = taken.take(
                    f"encoder.layer.{layer}.{hf_name}.{part}"
                )

    notes = []
    if lm_head is None:
        notes.append("the checkpoint has no masked-LM head: it starts as BERT initialises one")
        lm_head = _initial_masked_lm_head(embeddings.shape[0], embeddings.shape[1])
    if "weight" not in lm_head:  # tied to the token embeddings, as in BERT
        lm_head["weight"] = state[ENCODER + "embed_tokens.weight"]
    else:
        options["untie_weights_roberta"] = True
    state.update({f"encoder.lm_head.{name}": value for name, value in lm_head.items()})
    pooler = [taken.take_optional(f"pooler.dense.{part}") for part in ("weight", "bias")]
    has_pooler = pooler[0] is not None
    nsp = [taken.take_optional(f"cls.seq_relationship.{p}", False) for p in ("weight", "bias")]
    has_nsp = nsp[0] is not None
    if has_nsp and not has_pooler:
        raise ImportFailure(f"{source.directory}: an NSP layer without the pooler it reads")
    if has_pooler and kind == "xlmr":
        # RoBERTa was pretrained without NSP and its classification head has a dense layer of
        # its own: the pooler some of its checkpoints carry was never trained.
        notes.append("left out: the pooler (RoBERTa's classifier does not use one)")
        has_pooler = False
    if has_pooler:
        state["pooler.dense.weight"], state["pooler.dense.bias"] = pooler
        options["sentence_head_from_pooler"] = True
    if has_nsp:
        head = "classification_heads.sentence_pair."
        state[head + "dense.weight"], state[head + "dense.bias"] = pooler
        state[head + "out_proj.weight"], state[head + "out_proj.bias"] = nsp
    taken.check_all_taken()
    return FairseqLayout(arch, options, state, has_nsp, has_pooler, notes)


def rows_in_order(table: Tensor, order: Tensor) -> Tensor:
    """`table[order]`, in place: BERT's order moves only the rows up to its special tokens
    (the others keep their index), so only those are copied, not the whole table."""
    moved = (order != torch.arange(len(order))).nonzero()
    if len(moved) == 0:
        return table
    end = int(moved.max()) + 1
    table[:end] = table[order[:end]]
    return table


def _masked_lm_head(taken: _Weights, order: Tensor, embeddings: Tensor) -> Optional[Dict]:
    """BERT's `cls.predictions` or RoBERTa's `lm_head` (dense, act, layer norm, decoder + bias)
    as the weights of fairseq's RobertaLMHead in fairseq's order, without "weight" when the
    decoder is tied to the token embeddings; None for a model saved without it (BertModel)."""
    names = (
        ("cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm")
        + ("cls.predictions.decoder", "cls.predictions.bias")
        if taken.has("cls.predictions.bias", False)
        else ("lm_head.dense", "lm_head.layer_norm", "lm_head.decoder", "lm_head.bias")
    )
    dense, norm, decoder, bias = names
    if not taken.has(bias, False):
        return None
    head: Dict[str, Tensor] = {}
    for hf_name, fairseq_name in ((dense, "dense"), (norm, "layer_norm")):
        for part in ("weight", "bias"):
            head[f"{fairseq_name}.{part}"] = taken.take(f"{hf_name}.{part}", False)
    output_bias = taken.take(bias, False)
    decoder_bias = taken.take_optional(decoder + ".bias", False)
    if decoder_bias is not None and not torch.equal(decoder_bias, output_bias):
        raise ImportFailure(f"{taken.where}: {decoder}.bias differs from {bias}")
    head["bias"] = output_bias.index_select(0, order)
    decoder_weight = taken.take_optional(decoder + ".weight", False)
    if decoder_weight is not None and not torch.equal(decoder_weight, embeddings):
        head["weight"] = decoder_weight.index_select(0, order)
    return head


def _initial_masked_lm_head(vocabulary: int, dim: int) -> Dict[str, Tensor]:
    """A masked-LM head as BERT initialises one: normal with std 0.02, layer norm 1 and 0,
    biases 0 (seeded: an import is reproducible); tied to the token embeddings."""
    generator = torch.Generator().manual_seed(0)
    return {
        "dense.weight": torch.randn(dim, dim, generator=generator) * 0.02,
        "dense.bias": torch.zeros(dim),
        "layer_norm.weight": torch.ones(dim),
        "layer_norm.bias": torch.zeros(dim),
        "bias": torch.zeros(vocabulary),
    }
