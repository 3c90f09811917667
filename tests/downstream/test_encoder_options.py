"""The options that rebuild a pretrained encoder for fine-tuning (downstream.encoder_options)."""

from fairseq_struct.downstream.encoder_options import encoder_arguments


def test_bert_elmo_repeats_its_character_cnn():
    """A model trained from scratch beside the pretrained one (the encoder grid's "scratch" runs)
    gets the same character CNN, not its arch's default bank."""
    config = {
        "arch": "bert_elmo_tiny",
        "encoder_layers": 2,
        "char_embed_dim": 16,
        "char_filters": "1:32,2:32,3:64,4:128,5:256,6:512,7:32",
        "max_word_chars": 50,
        "tokens_are_words": True,  # a task option: not the encoder's
    }
    arguments = encoder_arguments(config)
    assert arguments == [
        "--arch", "bert_elmo_tiny", "--encoder-layers", "2", "--char-embed-dim", "16",
        "--char-filters", "1:32,2:32,3:64,4:128,5:256,6:512,7:32", "--max-word-chars", "50",
    ]  # fmt: skip
