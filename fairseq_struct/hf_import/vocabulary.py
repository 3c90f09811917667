"""The imported model's tokenizer, and how its pieces mark words (the dictionary that its
vocabulary becomes: `pieces.hf_tokenizer.map_vocabulary`)."""

from pathlib import Path
from typing import Any, List

from fairseq_struct.hf_import.source import HFSource, ImportFailure
from fairseq_struct.pieces.markers import WORD_START
from fairseq_struct.pieces.word_boundaries import WORDPIECE_CONTINUATION

TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "sentencepiece.bpe.model")


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
