"""Configuration of a fairseq-struct encoder exported to Hugging Face transformers.

Written by `fairseq-struct export-hf`; each field that changes the forward pass is
named after the fairseq option it comes from (in brackets below).
"""

from typing import Any, List, Optional

from transformers import PretrainedConfig

POSITION_MODES = ("1d", "2d", "none", "fairseq_learned")
# Copied from fairseq_struct.modules.structural_position_embedding.SUBWORD_STRATEGIES
SUBWORD_STRATEGIES = ("uniform", "paper", "leftover_as_last")
ACTIVATIONS = ("relu", "gelu", "gelu_accurate", "gelu_fast", "tanh", "linear")
TOKEN_EMBEDDINGS = ("table", "characters")
TOKEN_HEADS = ("softmax", "lcrf", "lcrf_ner")


class StructEncoderConfig(PretrainedConfig):
    """BERT2D / BERT-ELMo / RoBERTa encoder options.

    position_embedding: "1d" (a table of token positions 0..T-1), "2d" (BERT2D: word position +
        subword position), "none", or "fairseq_learned" (stock fairseq roberta: token positions
        counted from padding_idx + 1, padding at padding_idx) [--position-embedding]
    max_position_embeddings: rows of the (word) position table [--max-positions, BERT2D's
        --max-word-positions where set: a sequence may have more tokens than words]
    max_intermediate_subwords, subword_id_strategy: BERT2D's M and the ids of the intermediate
        pieces of longer words [--max-intermediate-subwords, --subword-id-strategy]
    num_segments: segment embeddings (0: none); tokens after the first </s> are segment 1
        [--num-segments]
    restart_word_positions: 2D word positions count from 0 again in segment 1, as the published
        BERT2D's tokenizer numbers them [--restart-word-positions]
    relative_positions: Shaw relative positions clipped at K in every self-attention (0: off)
        [--relative-positions]
    whole_word_attention, wwa_window, wwa_max_relative_position: Whole-Word Attention in every
        layer [--whole-word-attention, --wwa-window, --relative-positions or 16]
    token_embedding: "table" (an embedding per dictionary symbol) or "characters" (BERT-ELMo's
        character CNN over each symbol's spelling; char_* fields) [--arch bert_elmo*]
    output_vocab_size: masked-LM outputs (the first N dictionary symbols) [--output-vocab-size]
    tie_lm_head: the masked-LM output matrix is the token embedding table
        [not --untie-weights-roberta]
    classifier_activation, classifier_dropout: the classification heads [--pooler-activation-fn,
        --pooler-dropout]
    token_head: "softmax" (one label per word) or a linear-chain CRF ("lcrf", "lcrf_ner")
        [token_classification --head]; entity_fix: decode with the Entity-Fix rule [--entity-fix]
    token_head_layers: 2, the classification head's shape per token (dense, activation,
        out_proj), or 1, BertForTokenClassification's (one linear layer) [--head-layers]
    """

    model_type = "fairseq_struct_encoder"

    def __init__(
        self,
        vocab_size: int = 8000,
        hidden_size: int = 768,
        num_hidden_layers: int = 12,
        num_attention_heads: int = 12,
        intermediate_size: int = 3072,
        hidden_act: str = "gelu",
        hidden_dropout_prob: float = 0.1,
        attention_probs_dropout_prob: float = 0.1,
        activation_dropout: float = 0.0,
        layer_norm_eps: float = 1e-5,
        normalize_before: bool = False,
        layernorm_embedding: bool = True,
        embed_scale: float = 1.0,
        position_embedding: str = "1d",
        max_position_embeddings: int = 512,
        max_intermediate_subwords: int = 3,
        subword_id_strategy: str = "uniform",
        num_segments: int = 0,
        restart_word_positions: bool = False,
        relative_positions: int = 0,
        whole_word_attention: bool = False,
        wwa_window: int = 5,
        wwa_max_relative_position: int = 16,
        wwa_block_size: int = 16,
        token_embedding: str = "table",
        char_embed_dim: int = 16,
        max_word_chars: int = 50,
        num_characters: int = 4,
        char_filters: Optional[List[List[int]]] = None,
        num_highway: int = 2,
        output_vocab_size: Optional[int] = None,
        tie_lm_head: bool = True,
        classifier_activation: str = "tanh",
        classifier_dropout: float = 0.0,
        token_head: str = "softmax",
        token_head_layers: int = 2,
        entity_fix: bool = False,
        initializer_range: float = 0.02,
        mask_token_id: Optional[int] = None,
        **kwargs: Any,
    ) -> None:
        for name, value, allowed in (
            ("position_embedding", position_embedding, POSITION_MODES),
            ("subword_id_strategy", subword_id_strategy, SUBWORD_STRATEGIES),
            ("hidden_act", hidden_act, ACTIVATIONS),
            ("classifier_activation", classifier_activation, ACTIVATIONS),
            ("token_embedding", token_embedding, TOKEN_EMBEDDINGS),
            ("token_head", token_head, TOKEN_HEADS),
        ):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, not {value!r}")
        if token_head_layers not in (1, 2):
            raise ValueError(f"token_head_layers must be 1 or 2, not {token_head_layers!r}")
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.activation_dropout = activation_dropout
        self.layer_norm_eps = layer_norm_eps
        self.normalize_before = normalize_before
        self.layernorm_embedding = layernorm_embedding
        self.embed_scale = embed_scale
        self.position_embedding = position_embedding
        self.max_position_embeddings = max_position_embeddings
        self.max_intermediate_subwords = max_intermediate_subwords
        self.subword_id_strategy = subword_id_strategy
        self.num_segments = num_segments
        self.restart_word_positions = restart_word_positions
        self.relative_positions = relative_positions
        self.whole_word_attention = whole_word_attention
        self.wwa_window = wwa_window
        self.wwa_max_relative_position = wwa_max_relative_position
        self.wwa_block_size = wwa_block_size
        self.token_embedding = token_embedding
        self.char_embed_dim = char_embed_dim
        self.max_word_chars = max_word_chars
        self.num_characters = num_characters
        # (width, filters) of each convolution: BERT-ELMo's seven (Polatbilek, 4.2.2) by default.
        self.char_filters = char_filters or [
            [1, 32],
            [2, 32],
            [3, 64],
            [4, 128],
            [5, 256],
            [6, 512],
            [7, 32],
        ]
        self.num_highway = num_highway
        self.output_vocab_size = output_vocab_size or vocab_size
        self.tie_lm_head = tie_lm_head
        self.classifier_activation = classifier_activation
        self.classifier_dropout = classifier_dropout
        self.token_head = token_head
        self.token_head_layers = token_head_layers
        self.entity_fix = entity_fix
        self.initializer_range = initializer_range
        self.mask_token_id = mask_token_id
        super().__init__(**kwargs)
