"""The imported model's tokenizer, and its vocabulary as a fairseq dictionary.

fairseq's `Dictionary` always begins with `<s> <pad> </s> <unk>` (ids 0-3) and its file lists
only the symbols after them; fairseq's masked-LM and fine-tuning tasks find the mask as
`<mask>`. So the tokenizer's CLS, PAD, SEP and UNK tokens take ids 0-3 under those names, its
mask token is written as `<mask>`, and every other token follows in the tokenizer's order.
`hf_ids[i]` is the tokenizer's id of fairseq's symbol i: the embedding rows and the MLM output
bias are permuted by it (XLM-R's vocabulary, made from fairseq's, maps onto itself).
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List

from fairseq_struct.hf_import.source import HFSource, ImportFailure
from fairseq_struct.pieces.hf_tokenizer import FAIRSEQ_SPECIALS, special_token_names
from fairseq_struct.pieces.markers import WORD_START
from fairseq_struct.pieces.word_boundaries import WORDPIECE_CONTINUATION

FAIRSEQ_FIRST = ("cls_token", "pad_token", "sep_token", "unk_token")
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "sentencepiece.bpe.model")


@dataclass
class VocabularyMapping:
    symbols: List[str]  # fairseq's order: <s> <pad> </s> <unk>, then the dictionary file's
    hf_ids: List[int]
    special_names: Dict[str, str]  # the tokenizer's special token -> its fairseq name

    def dictionary_lines(self) -> List[str]:
        """dict.txt: every symbol after fairseq's four, with a count fairseq ignores here."""
        return [f"{symbol} 1" for symbol in self.symbols[len(FAIRSEQ_FIRST) :]]


def load_tokenizer(source: HFSource, kind: str) -> Any:
    """The model's own fast tokenizer (BERT's WordPiece, or XLM-R's SentencePiece pieces)."""
    if not any((source.directory / name).exists() for name in TOKENIZER_FILES):
        raise ImportFailure(
            f"{source.directory}: no tokenizer file ({', '.join(TOKENIZER_FILES)}): the "
            "vocabulary is part of the model"
        )
    from transformers import BertTokenizer, XLMRobertaTokenizer

    tokenizer_class = XLMRobertaTokenizer if kind == "xlmr" else BertTokenizer
    try:
        return tokenizer_class.from_pretrained(str(source.directory), local_files_only=True)
    except Exception as error:
        raise ImportFailure(
            f"{source.directory}: its tokenizer files do not load as a "
            f"{tokenizer_class.__name__} ({type(error).__name__}: {error})"
        ) from None


def map_vocabulary(tokenizer: Any, embedding_rows: int, where: Path) -> VocabularyMapping:
    vocabulary = tokenizer.get_vocab()
    if sorted(vocabulary.values()) != list(range(len(vocabulary))):
        raise ImportFailure(f"{where}: the tokenizer's ids are not 0..{len(vocabulary) - 1}")
    if len(vocabulary) != embedding_rows:
        raise ImportFailure(
            f"{where}: the tokenizer has {len(vocabulary)} tokens but the model's embedding "
            f"table {embedding_rows} rows: the vocabulary does not belong to these weights"
        )
    by_id = sorted(vocabulary, key=vocabulary.__getitem__)
    specials = {}
    for attribute in FAIRSEQ_SPECIALS:
        token = getattr(tokenizer, attribute, None)
        if token is None or str(token) not in vocabulary:
            raise ImportFailure(f"{where}: the tokenizer has no {attribute} in its vocabulary")
        specials[attribute] = vocabulary[str(token)]
    first = [specials[attribute] for attribute in FAIRSEQ_FIRST]
    if len(set(first)) != len(first):
        raise ImportFailure(f"{where}: two of the tokens CLS, PAD, SEP, UNK are the same token")
    names = special_token_names(tokenizer)
    rest = [index for index in range(len(by_id)) if index not in set(first)]
    symbols = [FAIRSEQ_SPECIALS[attribute] for attribute in FAIRSEQ_FIRST] + [
        names.get(by_id[index], by_id[index]) for index in rest
    ]
    if len(set(symbols)) != len(symbols):
        clashing = sorted({s for s in symbols if symbols.count(s) > 1})
        raise ImportFailure(
            f"{where}: the vocabulary has ordinary tokens named like fairseq's special symbols "
            f"({', '.join(clashing)}), which a fairseq dictionary cannot hold twice"
        )
    return VocabularyMapping(symbols, first + rest, names)


def word_start_convention(symbols: List[str], kind: str, where: Path) -> str:
    """ "wordpiece" or "sentencepiece": how the model's pieces mark words (checked)."""
    continued = sum(symbol.startswith(WORDPIECE_CONTINUATION) for symbol in symbols)
    marked = sum(symbol.startswith(WORD_START) for symbol in symbols)
    convention = "wordpiece" if continued > marked else "sentencepiece"
    expected = "sentencepiece" if kind == "xlmr" else "wordpiece"
    if convention != expected or max(continued, marked) == 0:
        raise ImportFailure(
            f"{where}: the vocabulary's pieces are not {expected} pieces ({continued} start "
            f"with {WORDPIECE_CONTINUATION!r}, {marked} with {WORD_START!r}); word boundaries "
            "(whole-word masking, 2D positions, labels on first pieces) need them (a RoBERTa "
            "with GPT-2's byte-level BPE is not supported)"
        )
    return convention
