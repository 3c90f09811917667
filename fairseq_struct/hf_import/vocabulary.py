"""The imported model's tokenizer, and how its pieces mark words (the dictionary that its
vocabulary becomes: `pieces.hf_tokenizer.map_vocabulary`)."""

from pathlib import Path
from typing import Any, Dict, List, Optional

from fairseq_struct.hf_import.source import HFSource, ImportFailure
from fairseq_struct.pieces.hf_tokenizer import BERT_VOCABULARY_FILE, TOKENIZER_FILE
from fairseq_struct.pieces.markers import WORD_START
from fairseq_struct.pieces.word_boundaries import WORDPIECE_CONTINUATION

TOKENIZER_FILES = (TOKENIZER_FILE, BERT_VOCABULARY_FILE, "sentencepiece.bpe.model")


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


def _vocab_txt_tokens(path: Path) -> List[str]:
    """vocab.txt's tokens in id order, read as transformers' `load_vocab` reads them (one
    line each, the newline stripped)."""
    with open(path, encoding="utf-8") as reader:
        return [line.rstrip("\n") for line in reader.readlines()]


def _tokenizer_json_vocabulary(path: Path) -> Dict[str, int]:
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(path)).get_vocab(with_added_tokens=True)


def vocabulary_files_disagreement(directory: Path, tokenizer: Any) -> Optional[Dict[str, Any]]:
    """Where a model directory holds both vocab.txt and tokenizer.json and their vocabularies
    differ: the first id at which they do (each file's token there, None past its end) and each
    file's size; None where they agree or one of the files is absent.

    transformers' tokenizers (`AutoTokenizer`, `BertTokenizer`) read tokenizer.json when there is
    one, and the import uses the vocabulary they load: checked here, so that what the import
    says it used is what it used."""
    vocab_txt, tokenizer_json = directory / BERT_VOCABULARY_FILE, directory / TOKENIZER_FILE
    if not tokenizer_json.exists():
        return None
    fast = _tokenizer_json_vocabulary(tokenizer_json)
    if tokenizer.get_vocab() != fast:
        raise ImportFailure(
            f"{directory}: the tokenizer transformers loads does not have the vocabulary of "
            f"{TOKENIZER_FILE}; the import cannot tell which vocabulary the model uses"
        )
    if not vocab_txt.exists():
        return None
    listed = _vocab_txt_tokens(vocab_txt)
    by_id = {index: token for token, index in fast.items()}
    size = max(by_id) + 1 if by_id else 0
    for index in range(max(len(listed), size)):
        in_txt = listed[index] if index < len(listed) else None
        in_json = by_id.get(index)
        if in_txt != in_json:
            return {
                "used": TOKENIZER_FILE,
                "not_used": BERT_VOCABULARY_FILE,
                "first_difference": {
                    "id": index,
                    BERT_VOCABULARY_FILE: in_txt,
                    TOKENIZER_FILE: in_json,
                },
                "sizes": {BERT_VOCABULARY_FILE: len(listed), TOKENIZER_FILE: len(fast)},
            }
    return None


def describe_disagreement(directory: Path, disagreement: Dict[str, Any]) -> str:
    """The warning of `vocabulary_files_disagreement`: both files, the first difference."""
    first = disagreement["first_difference"]
    sizes = disagreement["sizes"]
    return (
        f"{directory}: {BERT_VOCABULARY_FILE} and {TOKENIZER_FILE} disagree: id {first['id']} is "
        f"{first[BERT_VOCABULARY_FILE]!r} in {BERT_VOCABULARY_FILE} ({sizes[BERT_VOCABULARY_FILE]} "
        f"tokens) but {first[TOKENIZER_FILE]!r} in {TOKENIZER_FILE} ({sizes[TOKENIZER_FILE]} "
        f"tokens); the import uses {TOKENIZER_FILE}, as transformers' AutoTokenizer does"
    )


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
