"""BERT-ELMo (Polatbilek; design.md §4.3): a BERT whose token embeddings come from characters.

Input is whole words (`--arch bert_elmo_base --tokens-are-words`, data binarized with
`fairseq-preprocess --only-source` from tokenized text). Every word, also one never seen, is
embedded from its spelling by the character CNN (`embed_words(["wug"])`); the MLM output covers
the first `--output-vocab-size` words of the frequency-sorted dictionary (rarer targets: <unk>).
"""

from typing import Any, Dict, List, Sequence, Tuple

import torch
from fairseq.models import register_model, register_model_architecture
from fairseq.models.roberta.model import base_architecture as roberta_base_architecture
from fairseq.utils import safe_getattr
from torch import Tensor, nn

from fairseq_struct.models.struct_roberta import (
    StructRobertaEncoder,
    StructRobertaModel,
    struct_encoder_defaults,
    tiny_encoder_dimensions,
)
from fairseq_struct.modules.character_cnn import (
    CHARACTER_FILTERS,
    HIGHWAY_GATE_BIAS,
    CharacterCNNWordEmbedder,
    format_filter_bank,
    parse_filter_bank,
)
from fairseq_struct.modules.character_vocabulary import PAD, CharacterVocabulary


def trim_padding(characters: Tensor, max_filter_width: int) -> Tensor:
    """Drop padding columns that cannot change the CNN's output (the same embeddings, faster).

    Padding characters embed to zeros, so every window of a convolution that lies wholly in the
    padding gives the same value (the filter's bias). Keeping `max_filter_width` padding columns
    after the longest word leaves every word at least one such window per filter, so the max over
    time sees the same set of values as with all `max_chars` columns, and so does its gradient.
    """
    longest = int(characters.ne(PAD).sum(dim=1).max()) if characters.numel() else 0
    return characters[:, : min(characters.size(1), longest + max_filter_width)]


def saved_filter_bank(state_dict: Dict[str, Tensor], prefix: str) -> Tuple[Tuple[int, int], ...]:
    """(width, filters) of the character CNN's convolutions in a state dict (Conv1d weights are
    (filters, char_embed_dim, width)); empty when it holds none under `prefix`."""
    bank = []
    while (weight := state_dict.get(f"{prefix}convolutions.{len(bank)}.weight")) is not None:
        bank.append((weight.size(2), weight.size(0)))
    return tuple(bank)


class DictionaryCharacterEmbedding(nn.Module):
    """Drop-in for the token embedding table: word id -> the char CNN of the word's spelling.

    The character set is kept in the checkpoint (`character_code_points`), so the model keeps
    its character ids when it is later loaded with another dictionary (fine-tuning data), and
    so is the filter bank (the convolutions' shapes): a checkpoint loads with its own CNN
    whatever `--char-filters` the loading command gives.
    """

    def __init__(
        self,
        dictionary: Any,
        embed_dim: int,
        char_embed_dim: int,
        max_chars: int,
        filters: Sequence[Tuple[int, int]] = CHARACTER_FILTERS,
    ):
        super().__init__()
        self.symbols: List[str] = list(dictionary.symbols)
        self.embedding_dim = embed_dim
        self.padding_idx = dictionary.pad()
        self.max_chars = max_chars
        vocabulary = CharacterVocabulary.from_dictionary(dictionary)
        self.embedder = CharacterCNNWordEmbedder(
            len(vocabulary), embed_dim, char_embed_dim, filters=filters
        )
        self.register_buffer("character_code_points", vocabulary.as_tensor())
        self._set_vocabulary(vocabulary)

    def _set_vocabulary(self, vocabulary: CharacterVocabulary) -> None:
        self.vocabulary = vocabulary
        # Derived from the dictionary, so not saved: (vocab, max_chars) character ids.
        self.register_buffer(
            "word_characters",
            vocabulary.encode_words(self.symbols, self.max_chars),
            persistent=False,
        )

    def _load_from_state_dict(self, state_dict: Dict[str, Tensor], prefix: str, *args: Any):
        device = self.character_code_points.device
        saved = state_dict.get(prefix + "character_code_points")
        new_characters = saved is not None and not torch.equal(saved, self.character_code_points)
        if new_characters:
            self.character_code_points = saved.clone().to(device)
            self._set_vocabulary(CharacterVocabulary.from_tensor(saved))
            self.word_characters = self.word_characters.to(device)
        filters = saved_filter_bank(state_dict, prefix + "embedder.") or self.embedder.filters
        if new_characters or filters != self.embedder.filters:
            # Sized for the saved characters and filters before the children load their weights.
            old = self.embedder
            self.embedder = CharacterCNNWordEmbedder(
                len(self.vocabulary),
                self.embedding_dim,
                old.char_embed.embedding_dim,
                filters=filters,
                num_highway=len(old.highways),
            ).to(device=device, dtype=old.projection.weight.dtype)
        super()._load_from_state_dict(state_dict, prefix, *args)

    def forward(self, tokens: Tensor) -> Tensor:
        if self.embeds_distinct_words(tokens):
            # Each distinct word of the batch goes through the CNN once, no wider than needed.
            words, inverse = torch.unique(tokens, return_inverse=True)
            characters = trim_padding(self.word_characters[words], self.embedder.max_width)
            return self.embedder(characters)[inverse]
        # Fixed shapes, no host synchronisation: every token at the full character width.
        return self.embedder(self.word_characters[tokens.reshape(-1)]).view(
            tokens.shape + (self.embedding_dim,)
        )

    @staticmethod
    def embeds_distinct_words(tokens: Tensor) -> bool:
        """Deduplicate on the CPU only: finding the distinct words and the longest one sizes
        tensors by their values, free on a CPU but a host synchronisation on a GPU, where the
        CNN over every token (a few percent of a base model's FLOPs) is the cheaper choice.
        Both give the same embeddings."""
        return tokens.device.type == "cpu"

    def set_symbols(self, symbols: List[str]) -> None:
        """Embed a grown dictionary (words appended after training, e.g. at prediction time):
        every word, also a new one, is spelled in the saved character set."""
        self.symbols = list(symbols)
        device = self.word_characters.device
        self._set_vocabulary(self.vocabulary)
        self.word_characters = self.word_characters.to(device)

    def reset_highway_gates(self) -> None:
        """Back to the carry-biased gates (BERT's initialisation zeroes every Linear bias)."""
        for highway in self.embedder.highways:
            nn.init.constant_(highway.gate.bias, HIGHWAY_GATE_BIAS)

    def embed_words(self, words: List[str]) -> Tensor:
        """(len(words), embed_dim) embeddings of any words, in the dictionary or not."""
        device = self.character_code_points.device
        characters = self.vocabulary.encode_words(words, self.max_chars).to(device)
        return self.embedder(characters)


class BertElmoEncoder(StructRobertaEncoder):
    def build_embedding(self, vocab_size: int, embedding_dim: int, padding_idx: int) -> nn.Module:
        return DictionaryCharacterEmbedding(
            self.dictionary,
            embedding_dim,
            self.args.char_embed_dim,
            self.args.max_word_chars,
            parse_filter_bank(self.args.char_filters),
        )

    def build_lm_head(self, embed_dim: int, output_dim: int, activation_fn: str, weight: Any):
        # No input embedding matrix exists to tie to: the output layer has its own weights.
        return super().build_lm_head(embed_dim, self.output_vocab_size, activation_fn, None)

    @property
    def output_vocab_size(self) -> int:
        size = self.args.output_vocab_size
        return len(self.dictionary) if size <= 0 else min(size, len(self.dictionary))

    def output_targets(self, targets: Tensor) -> Tensor:
        """Dictionary ids -> LM output ids: words beyond the output vocabulary become <unk>."""
        return targets.masked_fill(targets >= self.output_vocab_size, self.dictionary.unk())

    def embed_words(self, words: List[str]) -> Tensor:
        return self.sentence_encoder.embed_tokens.embed_words(words)


@register_model("bert_elmo")
class BertElmoModel(StructRobertaModel):
    encoder_class = BertElmoEncoder

    def __init__(self, args: Any, encoder: BertElmoEncoder) -> None:
        super().__init__(args, encoder)  # applies BERT's initialisation to every module
        encoder.sentence_encoder.embed_tokens.reset_highway_gates()

    @staticmethod
    def add_args(parser: Any) -> None:
        StructRobertaModel.add_args(parser)
        parser.add_argument("--char-embed-dim", type=int, help="character embedding size")
        parser.add_argument(
            "--char-filters",
            type=str,
            help="the character CNN's convolutions as WIDTH:FILTERS,... (default: BERT-ELMo's "
            f"{format_filter_bank(CHARACTER_FILTERS)})",
        )
        parser.add_argument(
            "--max-word-chars",
            type=int,
            help="characters per word incl. begin/end marks; longer words are truncated",
        )
        parser.add_argument(
            "--output-vocab-size",
            type=int,
            help="MLM output over the N most frequent words (0: the whole dictionary)",
        )

    def upgrade_state_dict_named(self, state_dict: Dict[str, Tensor], name: str) -> None:
        """Load an MLM head saved with a smaller dictionary (fine-tuning data appends words).

        Fine-tuning data keeps the pretraining dictionary's ids and appends the new words
        (every word embeds from its characters), so an output layer over the whole dictionary
        grows: the saved rows are kept, the new rows keep their initial values.
        """
        super().upgrade_state_dict_named(state_dict, name)
        prefix = name + "." if name else ""
        current = self.encoder.lm_head.state_dict()
        for key in ("weight", "bias"):
            saved = state_dict.get(f"{prefix}encoder.lm_head.{key}")
            wanted = current[key]
            if saved is not None and saved.size(0) < wanted.size(0):
                grown = wanted.clone()
                grown[: saved.size(0)] = saved
                state_dict[f"{prefix}encoder.lm_head.{key}"] = grown

    @classmethod
    def build_model(cls, args: Any, task: Any) -> "BertElmoModel":
        lookup = getattr(task, "word_start_lookup", None)
        if lookup is not None and not bool(lookup.all()):
            raise ValueError(
                "bert_elmo reads whole words: binarize tokenized words (not SentencePiece "
                "pieces) and pass --tokens-are-words to the masked_lm_struct task"
            )
        args.tokens_are_words = True
        args.untie_weights_roberta = True
        return super().build_model(args, task)


@register_model_architecture("bert_elmo", "bert_elmo")
def bert_elmo_architecture(args: Any) -> None:
    args.char_embed_dim = safe_getattr(args, "char_embed_dim", 16)
    args.char_filters = safe_getattr(args, "char_filters", format_filter_bank(CHARACTER_FILTERS))
    args.max_word_chars = safe_getattr(args, "max_word_chars", 50)
    args.output_vocab_size = safe_getattr(args, "output_vocab_size", 0)
    args.untie_weights_roberta = True
    struct_encoder_defaults(args)
    roberta_base_architecture(args)


@register_model_architecture("bert_elmo", "bert_elmo_base")
def bert_elmo_base_architecture(args: Any) -> None:
    args.max_positions = safe_getattr(args, "max_positions", 512)
    bert_elmo_architecture(args)


@register_model_architecture("bert_elmo", "bert_elmo_tiny")
def bert_elmo_tiny_architecture(args: Any) -> None:
    tiny_encoder_dimensions(args)
    bert_elmo_architecture(args)
