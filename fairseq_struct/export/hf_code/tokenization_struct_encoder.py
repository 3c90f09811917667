"""Tokenizers of exported fairseq-struct encoders: text -> the ids of the run's fairseq dictionary.

Written into a model directory by `fairseq-struct export-hf` (transformers, and
sentencepiece for pieces; never fairseq). `vocab.json` holds the fairseq dictionary's symbols in
id order; a sentence is `<s> units </s>`, a pair `<s> A </s> B </s>`, as in fairseq's binarized
data. `StructPieceTokenizer` (bert2d, roberta) and `StructWordTokenizer` (bert_elmo) say which
text they expect.
"""

import json
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from transformers import PreTrainedTokenizer

# Copied from fairseq_struct.pieces.markers.WORD_START
WORD_START = "\u2581"  # SentencePiece's word-start mark
# Copied from fairseq_struct.pieces.markers.MORPHEME_BOUNDARY
MORPHEME_BOUNDARY = "\uffed"  # between the morphemes of a word in segmented text
VOCAB_FILE = "vocab.json"
SPM_FILE = "spm.model"


class _FairseqDictionaryTokenizer(PreTrainedTokenizer):
    """Units -> ids through the fairseq dictionary; `<s> A </s> (B </s>)` framing."""

    vocab_files_names = {"vocab_file": VOCAB_FILE}
    model_input_names = ["input_ids", "attention_mask"]

    def __init__(
        self,
        vocab_file: str,
        bos_token: str = "<s>",
        eos_token: str = "</s>",
        unk_token: str = "<unk>",
        pad_token: str = "<pad>",
        mask_token: str = "<mask>",
        **kwargs: Any,
    ) -> None:
        with open(vocab_file, encoding="utf-8") as file:
            self.symbols: List[str] = json.load(file)
        # fairseq's Dictionary keeps the first id of a symbol listed twice.
        self.indices: Dict[str, int] = {}
        for index, symbol in enumerate(self.symbols):
            self.indices.setdefault(symbol, index)
        self.unk_index = self.indices[str(unk_token)]
        kwargs.setdefault("cls_token", bos_token)
        kwargs.setdefault("sep_token", eos_token)
        super().__init__(
            bos_token=bos_token,
            eos_token=eos_token,
            unk_token=unk_token,
            pad_token=pad_token,
            mask_token=mask_token,
            **kwargs,
        )

    @property
    def vocab_size(self) -> int:
        return len(self.symbols)

    def get_vocab(self) -> Dict[str, int]:
        vocab = dict(self.indices)
        vocab.update(self.added_tokens_encoder)
        return vocab

    def _convert_token_to_id(self, token: str) -> int:
        return self.indices.get(token, self.unk_index)

    def _convert_id_to_token(self, index: int) -> str:
        return self.symbols[index]

    def build_inputs_with_special_tokens(
        self, token_ids_0: List[int], token_ids_1: Optional[List[int]] = None
    ) -> List[int]:
        ids = [self.bos_token_id] + token_ids_0 + [self.eos_token_id]
        return ids if token_ids_1 is None else ids + token_ids_1 + [self.eos_token_id]

    def get_special_tokens_mask(
        self,
        token_ids_0: List[int],
        token_ids_1: Optional[List[int]] = None,
        already_has_special_tokens: bool = False,
    ) -> List[int]:
        if already_has_special_tokens:
            special = set(self.all_special_ids)
            return [int(index in special) for index in token_ids_0]
        mask = [1] + [0] * len(token_ids_0) + [1]
        return mask if token_ids_1 is None else mask + [0] * len(token_ids_1) + [1]

    def create_token_type_ids_from_sequences(
        self, token_ids_0: List[int], token_ids_1: Optional[List[int]] = None
    ) -> List[int]:
        # The model's own segments (fairseq's: 0 up to and including the first </s>, 1 after),
        # so that types asked for (`return_token_type_ids=True`) and passed on change nothing.
        first = len(token_ids_0) + 2  # <s> A </s>
        return [0] * first + ([] if token_ids_1 is None else [1] * (len(token_ids_1) + 1))

    def word_units(self, word: str) -> List[str]:
        """The units of one word (as fine-tuning data cut each labelled word on its own)."""
        return self._tokenize(word)

    def encode_words(self, words: Sequence[str]) -> Dict[str, List[Any]]:
        """`<s> units </s>` of already split words and `word_mask`: True on each word's first
        unit (where token-classification fine-tuning placed the word's label)."""
        input_ids = [self.bos_token_id]
        word_mask = [False]
        for word in words:
            units = self.word_units(word)
            if not units:
                raise ValueError(f"the word {word!r} has no units (empty or whitespace only)")
            input_ids += self.convert_tokens_to_ids(units)
            word_mask += [True] + [False] * (len(units) - 1)
        return {
            "input_ids": input_ids + [self.eos_token_id],
            "attention_mask": [1] * (len(input_ids) + 1),
            "word_mask": word_mask + [False],
        }

    def _save_vocabulary_file(self, save_directory: str, filename_prefix: Optional[str]) -> str:
        path = os.path.join(
            save_directory, (filename_prefix + "-" if filename_prefix else "") + VOCAB_FILE
        )
        with open(path, "w", encoding="utf-8") as file:
            json.dump(self.symbols, file, ensure_ascii=False)
        return path


class StructPieceTokenizer(_FairseqDictionaryTokenizer):
    """SentencePiece pieces of the pretraining run (bert2d, roberta), from `spm.model` after the
    preparation's whitespace normalisation; morpheme-boundary marks (￭) are never units.

    For a run prepared in `--mode morph`, give it *segmented* text, morphemes of a word joined by
    ￭ (U+FFED), e.g. "ev￭ler￭de kal￭dı ." made by

        from pathlib import Path  # with PYTHONHASHSEED=0, as the preparation runs Zemberek
        from fairseq_struct.morph.segmenters import segment_all
        segmented = segment_all("tr", ["evlerde kaldı ."], workers=1, out_dir=Path("."))

    Unsegmented text gives bpe-mode pieces, which may cut words differently from what the model
    was trained on (`segmentation` in tokenizer_config.json says which applies)."""

    vocab_files_names = {"vocab_file": VOCAB_FILE, "spm_file": SPM_FILE}

    def __init__(
        self,
        vocab_file: str,
        spm_file: str,
        segmentation: Optional[str] = None,
        **kwargs: Any,
    ) -> None:
        import sentencepiece

        self.spm_file = spm_file
        self.segmentation = segmentation
        self.sp_model = sentencepiece.SentencePieceProcessor(model_file=spm_file)
        super().__init__(vocab_file, segmentation=segmentation, **kwargs)

    def _tokenize(self, text: str, **kwargs: Any) -> List[str]:
        text = " ".join(text.split())  # the preparation's whitespace normalisation
        if not text:
            return []
        pieces = self.sp_model.encode(text, out_type=str)
        # Boundary marks end pieces but are not units of the binarized data.
        return [piece for piece in pieces if piece != MORPHEME_BOUNDARY]

    def convert_tokens_to_string(self, tokens: List[str]) -> str:
        text = "".join(tokens).replace(MORPHEME_BOUNDARY, "").replace(WORD_START, " ")
        return text.strip(" ")

    def save_vocabulary(
        self, save_directory: str, filename_prefix: Optional[str] = None
    ) -> Tuple[str, ...]:
        vocab = self._save_vocabulary_file(save_directory, filename_prefix)
        spm = os.path.join(
            save_directory, (filename_prefix + "-" if filename_prefix else "") + SPM_FILE
        )
        if os.path.abspath(spm) != os.path.abspath(self.spm_file):
            with open(spm, "wb") as file:
                file.write(self.sp_model.serialized_model_proto())
        return vocab, spm

    def __getstate__(self) -> Dict[str, Any]:
        state = self.__dict__.copy()
        state["sp_model"] = None  # SentencePiece processors do not pickle
        return state

    def __setstate__(self, state: Dict[str, Any]) -> None:
        import sentencepiece

        self.__dict__ = state
        self.sp_model = sentencepiece.SentencePieceProcessor(model_file=self.spm_file)


class StructWordTokenizer(_FairseqDictionaryTokenizer):
    """Whole words (bert_elmo, `--tokens-are-words` data): one unit per whitespace token. Give
    it Moses-tokenized text, as the pretraining text was, e.g. from
    `sacremoses.MosesTokenizer(lang="tr").tokenize(line, escape=False, return_str=True)`. Words
    the dictionary lacks become <unk> (fairseq_struct's own prediction instead appends them to
    the dictionary, since the character CNN embeds any word)."""

    def _tokenize(self, text: str, **kwargs: Any) -> List[str]:
        return text.split()  # fairseq-preprocess splits lines on whitespace

    def convert_tokens_to_string(self, tokens: List[str]) -> str:
        return " ".join(tokens)

    def save_vocabulary(
        self, save_directory: str, filename_prefix: Optional[str] = None
    ) -> Tuple[str, ...]:
        return (self._save_vocabulary_file(save_directory, filename_prefix),)
