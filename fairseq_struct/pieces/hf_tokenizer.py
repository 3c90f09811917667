"""Units cut by a Hugging Face tokenizer (`tokenizer.json`): WordPiece (BERT, BERTurk, mBERT,
BERT2D) or SentencePiece (XLM-R), exactly as the model's own fast tokenizer cuts them.

Each word is tokenized alone, without special tokens: the pre-tokenizers split at whitespace
(BERT's at punctuation too) and the normalisers work per character, so a sentence's pieces are
its words' pieces put together. Special tokens take fairseq's names (`map_vocabulary`).
"""

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Mapping, Sequence, Tuple, Union

PathLike = Union[str, Path]

TOKENIZER_FILE = "tokenizer.json"
BERT_VOCABULARY_FILE = "vocab.txt"  # BERT's vocabulary, one token a line in id order
# fairseq's roles of the special tokens, by the attribute name transformers gives each.
FAIRSEQ_SPECIALS = {
    "cls_token": "<s>",
    "pad_token": "<pad>",
    "sep_token": "</s>",
    "unk_token": "<unk>",
    "mask_token": "<mask>",
}
UNKNOWN = FAIRSEQ_SPECIALS["unk_token"]
FAIRSEQ_FIRST = ("cls_token", "pad_token", "sep_token", "unk_token")


class VocabularyError(ValueError):
    """A vocabulary that no fairseq dictionary can hold as it is."""


@dataclass
class VocabularyMapping:
    symbols: List[str]  # fairseq's order: <s> <pad> </s> <unk>, then the dictionary file's
    hf_ids: List[int]  # the tokenizer's id of each symbol: embedding rows are permuted by it
    special_names: Dict[str, str]  # the tokenizer's special token -> its fairseq name

    def dictionary_lines(self) -> List[str]:
        """dict.txt: every symbol after fairseq's four, with a count fairseq ignores here."""
        return [f"{symbol} 1" for symbol in self.symbols[len(FAIRSEQ_FIRST) :]]


class TokenizerUnits:
    """Cuts words into the tokens of a `tokenizer.json`, special tokens under fairseq's names."""

    def __init__(self, tokenizer_file: PathLike, special_names: Mapping[str, str]) -> None:
        from tokenizers import Tokenizer

        self.path = Path(tokenizer_file)
        self.tokenizer = Tokenizer.from_file(str(self.path))
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        by_id = sorted(self.tokenizer.get_vocab(with_added_tokens=True).items(), key=lambda x: x[1])
        self.vocabulary = [special_names.get(token, token) for token, _ in by_id]

    def cut_sentences(
        self, sentences: Sequence[Sequence[str]], with_spans: bool = False
    ) -> List[List[Tuple[List[str], List[Tuple[int, int]]]]]:
        """The tokens of each word of each sentence and (`with_spans`) their character spans in
        the word. The words of a sentence are tokenized as pre-split words, each alone."""
        encodings = self.tokenizer.encode_batch(
            [list(sentence) for sentence in sentences],
            is_pretokenized=True,
            add_special_tokens=False,
        )
        vocabulary, result = self.vocabulary, []
        no_spans: List[Tuple[int, int]] = []
        for sentence, encoding in zip(sentences, encodings):
            tokens: List[List[str]] = [[] for _ in sentence]
            # From the ids: a unigram model's `tokens` keep an unknown piece's own text.
            for index, word in zip(encoding.ids, encoding.word_ids):
                tokens[word].append(vocabulary[index])
            spans: List[List[Tuple[int, int]]] = [no_spans] * len(sentence)
            if with_spans:
                spans = [[] for _ in sentence]
                for (start, end), word in zip(encoding.offsets, encoding.word_ids):
                    spans[word].append((start, end))
            for word, text in enumerate(sentence):
                if not tokens[word]:
                    tokens[word], spans[word] = [UNKNOWN], [(0, len(text))]
            result.append(list(zip(tokens, spans)))
        return result


def special_tokens(tokenizer: object) -> Dict[str, str]:
    """{attribute (cls_token, ...): the token} of a transformers tokenizer."""
    return {
        attribute: str(getattr(tokenizer, attribute))
        for attribute in FAIRSEQ_SPECIALS
        if getattr(tokenizer, attribute, None) is not None
    }


def special_token_names(specials: Mapping[str, str]) -> Dict[str, str]:
    """{the special token: fairseq's name} for {attribute: the token}."""
    return {token: FAIRSEQ_SPECIALS[attribute] for attribute, token in specials.items()}


def map_vocabulary(
    vocabulary: Dict[str, int], specials: Dict[str, str], embedding_rows: int, where: Path
) -> VocabularyMapping:
    """The fairseq dictionary of `vocabulary` ({token: id}), whose special tokens `specials`
    gives ({"cls_token": "[CLS]", ...}).

    fairseq's `Dictionary` always begins with `<s> <pad> </s> <unk>` (ids 0-3), its file lists
    only the symbols after them, and fairseq's tasks find the mask as `<mask>`: so the
    tokenizer's CLS, PAD, SEP and UNK take ids 0-3 under those names, its mask token is
    `<mask>`, and every other token follows in the tokenizer's order.
    """
    if sorted(vocabulary.values()) != list(range(len(vocabulary))):
        raise VocabularyError(f"{where}: the tokenizer's ids are not 0..{len(vocabulary) - 1}")
    if len(vocabulary) != embedding_rows:
        raise VocabularyError(
            f"{where}: the tokenizer has {len(vocabulary)} tokens but the model's embedding "
            f"table {embedding_rows} rows: the vocabulary does not belong to these weights"
        )
    by_id = sorted(vocabulary, key=vocabulary.__getitem__)
    for attribute in FAIRSEQ_SPECIALS:
        if specials.get(attribute) not in vocabulary:
            raise VocabularyError(f"{where}: the tokenizer has no {attribute} in its vocabulary")
    first = [vocabulary[specials[attribute]] for attribute in FAIRSEQ_FIRST]
    if len(set(first)) != len(first):
        raise VocabularyError(f"{where}: two of the tokens CLS, PAD, SEP, UNK are the same token")
    names = special_token_names(specials)
    taken = set(first)
    rest = [index for index in range(len(by_id)) if index not in taken]
    symbols = [FAIRSEQ_SPECIALS[attribute] for attribute in FAIRSEQ_FIRST] + [
        names.get(by_id[index], by_id[index]) for index in rest
    ]
    if len(set(symbols)) != len(symbols):
        counts = Counter(symbols)
        clashing = sorted(symbol for symbol, count in counts.items() if count > 1)
        raise VocabularyError(
            f"{where}: the vocabulary has ordinary tokens named like fairseq's special symbols "
            f"({', '.join(clashing)}), which a fairseq dictionary cannot hold twice"
        )
    return VocabularyMapping(symbols, first + rest, names)
