"""The two marks that the segmented and SentencePiece-encoded text carries.

Every stage (segmentation, SentencePiece, the translation task, scoring) agrees on these,
so that generated pieces can always be turned back into the original words.
"""

from typing import Iterable, Union

# SentencePiece's meta symbol: a piece that starts with it begins a whitespace word.
WORD_START = "\u2581"
# Separates the morphemes of one word in segmented text ("gör￭eme￭dik"). SentencePiece is
# trained with it as a user-defined symbol, so no piece ever spans a morpheme boundary.
# U+FFED (HALFWIDTH BLACK SQUARE) does not occur in natural Turkish or Inuktitut text; input
# that contains it is rejected instead of being silently changed.
MORPHEME_BOUNDARY = "\uffed"


def pieces_to_text(pieces: Union[str, Iterable[str]]) -> str:
    """Turn SentencePiece pieces (a space-separated string or a list) back into plain text.

    Morpheme boundary marks, if they were kept in the token sequence, are removed.
    """
    if isinstance(pieces, str):
        pieces = pieces.split(" ")
    text = "".join(pieces).replace(MORPHEME_BOUNDARY, "").replace(WORD_START, " ")
    return text.strip(" ")
