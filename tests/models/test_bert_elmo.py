"""BERT-ELMo (design.md §4.3): words embedded from their characters, also words never seen."""

import pytest
import torch
from fairseq.data import Dictionary

import fairseq_struct.plugin  # noqa: F401  (registers the models)
from fairseq_struct.modules.character_cnn import CHARACTER_FILTERS, HIGHWAY_GATE_BIAS
from fairseq_struct.testing.build_from_arch import build_model_from_arch

WORDS = ["evler", "evlerde", "kitap", "kitabı", "gördüm", "."]


def _dictionary(words=WORDS) -> Dictionary:
    dictionary = Dictionary()
    for count, word in enumerate(reversed(words), start=1):
        dictionary.add_symbol(word, n=count)
    dictionary.finalize()  # sorted by frequency, as fairseq-preprocess writes it
    dictionary.add_symbol("<mask>")
    return dictionary


def _model(dictionary: Dictionary, **overrides):
    return build_model_from_arch("bert_elmo_tiny", dictionary, seed=0, **overrides).eval()


def test_shapes_and_word_level_output():
    dictionary = _dictionary()
    model = _model(dictionary, output_vocab_size=7)
    tokens = torch.tensor([[dictionary.bos()] + [dictionary.index(w) for w in WORDS]
                           + [dictionary.eos()]])  # fmt: skip
    with torch.no_grad():
        logits, _ = model(tokens)
        features, _ = model(tokens, features_only=True)
    assert logits.shape == (1, len(WORDS) + 2, 7)
    assert features.shape == (1, len(WORDS) + 2, 128)
    # Words beyond the 7 most frequent symbols are predicted as <unk>.
    targets = torch.arange(len(dictionary))
    mapped = model.encoder.output_targets(targets)
    assert mapped[:7].tolist() == list(range(7))
    assert (mapped[7:] == dictionary.unk()).all()


def test_highway_gates_keep_their_carry_bias_after_berts_initialisation():
    model = _model(_dictionary())
    for highway in model.encoder.sentence_encoder.embed_tokens.embedder.highways:
        assert torch.all(highway.gate.bias == HIGHWAY_GATE_BIAS)


def test_unseen_words_get_their_own_embedding_and_long_words_are_truncated():
    dictionary = _dictionary()
    model = _model(dictionary)
    with torch.no_grad():
        embeddings = model.encoder.embed_words(["wug", "wugs", "evler", "ğ" * 200, "ğ" * 48])
        table = model.encoder.sentence_encoder.embed_tokens(
            torch.tensor([dictionary.index("evler"), dictionary.unk()])
        )
    assert torch.isfinite(embeddings).all()
    assert not torch.allclose(embeddings[0], embeddings[1])  # a new word, a new embedding
    assert not torch.allclose(embeddings[0], table[1])  # ... not the <unk> embedding
    torch.testing.assert_close(embeddings[2], table[0])  # same as from the dictionary
    torch.testing.assert_close(embeddings[3], embeddings[4])  # 50 ids: <bow> 48 chars <eow>


def test_checkpoint_keeps_its_characters_with_another_dictionary():
    pretrained = _model(_dictionary())
    state = pretrained.state_dict()
    # Fine-tuning data with other words and a character ("w") the pretraining text lacked.
    other = _dictionary(["kitap", "wug", "evler", "."])
    model = _model(other)
    state = {key: value for key, value in state.items() if not key.startswith("encoder.lm_head")}
    model.load_state_dict(state, strict=False)  # the LM output is over another vocabulary
    with torch.no_grad():
        expected = pretrained.encoder.embed_words(["kitap", "wug"])
        tokens = torch.tensor([other.index("kitap"), other.index("wug")])
        actual = model.encoder.sentence_encoder.embed_tokens(tokens)
    torch.testing.assert_close(actual, expected)


def _filters(model) -> tuple:
    return model.encoder.sentence_encoder.embed_tokens.embedder.filters


def test_the_archs_have_the_papers_filters_and_the_option_sets_any_bank():
    assert CHARACTER_FILTERS == ((1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512), (7, 32))
    assert _filters(_model(_dictionary())) == CHARACTER_FILTERS
    assert _filters(build_model_from_arch("bert_elmo_base", _dictionary())) == CHARACTER_FILTERS
    model = _model(_dictionary(), char_filters="2:6, 5:10")
    assert _filters(model) == ((2, 6), (5, 10))
    assert model.encoder.sentence_encoder.embed_tokens.embedder.projection.in_features == 16
    with pytest.raises(ValueError, match=r"--char-filters '2:6,5': '5' is not WIDTH:FILTERS"):
        _model(_dictionary(), char_filters="2:6,5")


def test_a_checkpoint_loads_with_its_own_filter_bank():
    """A checkpoint of another bank than the loading command line's: the saved CNN, the same
    embeddings, in the model's dtype; and with a character set of its own as well."""
    dictionary = _dictionary()
    saved = _model(dictionary, char_filters="1:4,3:8,7:4")
    for other in (dictionary, _dictionary(["kitap", "wug", "evler", "."])):
        model = _model(other).to(torch.bfloat16)
        state = {k: v for k, v in saved.state_dict().items() if not k.startswith("encoder.lm")}
        model.load_state_dict(state, strict=False)  # the LM output is over another vocabulary
        assert _filters(model) == ((1, 4), (3, 8), (7, 4))
        embedding = model.encoder.sentence_encoder.embed_tokens
        assert embedding.embedder.projection.weight.dtype == torch.bfloat16
        with torch.no_grad():
            expected = saved.encoder.embed_words(["kitap", "evler"])
            actual = embedding(torch.tensor([other.index("kitap"), other.index("evler")]))
        torch.testing.assert_close(actual.float(), expected, rtol=2e-2, atol=2e-2)


def test_trimmed_padding_gives_the_same_embeddings_and_gradients():
    from fairseq_struct.models.bert_elmo import trim_padding

    dictionary = _dictionary()
    model = _model(dictionary)
    model.train()
    embedding = model.encoder.sentence_encoder.embed_tokens
    characters = embedding.word_characters[4:]
    trimmed = trim_padding(characters, embedding.embedder.max_width)
    longest = max(len(symbol) for symbol in dictionary.symbols[4:])  # incl. madeupword0000
    assert trimmed.shape[1] == longest + 2 + 7 < characters.shape[1]
    results = []
    for chars in (characters, trimmed):
        embedding.zero_grad()
        output = embedding.embedder(chars)
        output.pow(2).sum().backward()
        grads = [p.grad.clone() for p in embedding.embedder.parameters()]
        results.append((output.detach(), grads))
    (full, full_grads), (short, short_grads) = results
    torch.testing.assert_close(short, full)
    for a, b in zip(short_grads, full_grads):
        torch.testing.assert_close(a, b)


def test_the_gpu_path_embeds_every_token_like_the_deduplicated_cpu_path(monkeypatch):
    """On a GPU every token goes through the CNN at full width (no host synchronisation); on
    a CPU each distinct word once, trimmed: the same embeddings and gradients."""
    from fairseq_struct.models.bert_elmo import DictionaryCharacterEmbedding

    dictionary = _dictionary()
    model = _model(dictionary)
    model.train()
    embedding = model.encoder.sentence_encoder.embed_tokens
    tokens = torch.tensor([[0, 4, 5, 4, 2, 1, 1], [0, 6, 6, 7, 8, 9, 2]])
    assert DictionaryCharacterEmbedding.embeds_distinct_words(tokens)
    results = []
    for distinct in (True, False):
        monkeypatch.setattr(
            DictionaryCharacterEmbedding,
            "embeds_distinct_words",
            staticmethod(lambda tokens, distinct=distinct: distinct),
        )
        embedding.zero_grad()
        output = embedding(tokens)
        output.pow(2).sum().backward()
        results.append((output.detach(), [p.grad.clone() for p in embedding.parameters()]))
    (cpu_path, cpu_grads), (gpu_path, gpu_grads) = results
    assert gpu_path.shape == tokens.shape + (embedding.embedding_dim,)
    torch.testing.assert_close(gpu_path, cpu_path)
    for a, b in zip(gpu_grads, cpu_grads):
        torch.testing.assert_close(a, b)
