"""Units cut by a Hugging Face tokenizer (`tokenizer.json`): WordPiece (BERT, BERTurk, mBERT,
BERT2D) or SentencePiece (XLM-R), exactly as the model's own fast tokenizer cuts them.

A directory of such units (an imported model, or a pretraining run prepared with
`--units wordpiece`) holds `tokenizer.json` (the `tokenizers` library's file, which
transformers' fast tokenizers run) and, in its report, the special tokens' fairseq names:
fairseq's dictionaries keep `<s> <pad> </s> <unk>` first, so BERT's `[CLS] [PAD] [SEP] [UNK]`
are renamed to them (and `[MASK]` to `<mask>`), in the dictionary and in every cut.

Each word is tokenized alone, without special tokens: BERT's pre-tokenizer splits at
whitespace and punctuation, XLM-R's at whitespace, and their normalisers work character by
character, so a sentence's pieces are its words' pieces put together (checked against the
tokenizers on real text by tests/pieces/test_hf_tokenizer.py). A word the tokenizer gives no
piece for (only characters its cleaning removes) becomes one unknown token.
"""

from pathlib import Path
from typing import Dict, List, Mapping, Sequence, Tuple, Union

PathLike = Union[str, Path]

TOKENIZER_FILE = "tokenizer.json"
# fairseq's roles of the special tokens, by the attribute name transformers gives each.
FAIRSEQ_SPECIALS = {
    "cls_token": "<s>",
    "pad_token": "<pad>",
    "sep_token": "</s>",
    "unk_token": "<unk>",
    "mask_token": "<mask>",
}
UNKNOWN = FAIRSEQ_SPECIALS["unk_token"]


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
        result = []
        for sentence, encoding in zip(sentences, encodings):
            tokens: List[List[str]] = [[] for _ in sentence]
            spans: List[List[Tuple[int, int]]] = [[] for _ in sentence]
            offsets = encoding.offsets if with_spans else None
            # From the ids: a unigram model's `tokens` keep an unknown piece's own text.
            for position, (index, word) in enumerate(zip(encoding.ids, encoding.word_ids)):
                tokens[word].append(self.vocabulary[index])
                if offsets is not None:
                    spans[word].append(tuple(offsets[position]))
            for word, text in enumerate(sentence):
                if not tokens[word]:
                    tokens[word], spans[word] = [UNKNOWN], [(0, len(text))]
            result.append(list(zip(tokens, spans)))
        return result


def special_token_names(tokenizer: object) -> Dict[str, str]:
    """{the tokenizer's special token: fairseq's name} for a transformers tokenizer."""
    names = {}
    for attribute, fairseq_name in FAIRSEQ_SPECIALS.items():
        token = getattr(tokenizer, attribute, None)
        if token is not None:
            names[str(token)] = fairseq_name
    return names
