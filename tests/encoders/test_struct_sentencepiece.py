"""`--bpe struct_sentencepiece`: source text encoded as the preparation encoded it (whitespace
normalised first, which fairseq's own `sentencepiece` encoder does not do), pieces decoded to
plain words without morpheme marks."""

import pytest
from fairseq.data.encoders.sentencepiece_bpe import SentencepieceBPE, SentencepieceConfig

from fairseq_struct.encoders.struct_sentencepiece import (
    StructSentencePiece,
    StructSentencePieceConfig,
)
from fairseq_struct.morph.sentencepiece_model import SentencePieceModel
from fairseq_struct.pieces.markers import MORPHEME_BOUNDARY

TEXT = ["I could not see them .", "gör" + MORPHEME_BOUNDARY + "eme" + MORPHEME_BOUNDARY + "dik"]


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("spm") / "spm.model"
    SentencePieceModel.train(TEXT * 20, path, vocab_size=40)
    return str(path)


def test_whitespace_is_normalised_as_in_the_preparation(model_path):
    encoder = StructSentencePiece(StructSentencePieceConfig(sentencepiece_model=model_path))
    prepared = " ".join(SentencePieceModel(model_path).encode("I could not see them ."))
    assert encoder.encode("  I could  not\tsee them .  ") == prepared
    assert encoder.encode("I could not see them .") == prepared
    assert encoder.encode(" \t ") == ""
    # fairseq's encoder keeps every space as a piece of its own: other source tokens.
    stock = SentencepieceBPE(SentencepieceConfig(sentencepiece_model=model_path))
    assert stock.encode("  I could  not\tsee them .  ") != prepared


def test_decoding_gives_plain_words_without_morpheme_marks(model_path):
    encoder = StructSentencePiece(StructSentencePieceConfig(sentencepiece_model=model_path))
    assert encoder.decode(encoder.encode("I  could not see them .")) == "I could not see them ."
    assert encoder.decode(f"\u2581gör {MORPHEME_BOUNDARY} eme \u2581bak") == "göreme bak"
    assert encoder.is_beginning_of_word("\u2581gör") and not encoder.is_beginning_of_word("eme")
