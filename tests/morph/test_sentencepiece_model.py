"""SentencePieceModel: exact round trip, no piece across a morpheme boundary (design.md §3)."""

import random

import pytest
from conftest import SHARED_DATA

from fairseq_struct.morph.sentencepiece_model import SentencePieceModel, reservoir_sample
from fairseq_struct.pieces.markers import MORPHEME_BOUNDARY, WORD_START, pieces_to_text

# Real parallel text for the round trip on a whole corpus; it is shared development data, not
# part of the repository, so the test that reads it skips when it is absent.
TATOEBA = SHARED_DATA / "en-tr-tatoeba"
B = MORPHEME_BOUNDARY

STEMS = ["ev", "kitap", "göz", "yol", "çocuk", "İstanbul", "Ankara", "okul"]
SUFFIXES = ["ler", "imiz", "den", "da", "'da", "ı", "lar", "ın", "a"]
ENGLISH = ["the", "houses", "of", "our", "children", "from", "road", "school", "eyes", "book"]


def synthetic_segmented_lines(count: int, seed: int) -> list:
    """Turkish-like words of one to three morphemes, with punctuation and numbers."""
    rng = random.Random(seed)
    lines = []
    for _ in range(count):
        words = []
        for _ in range(rng.randint(1, 8)):
            morphemes = [rng.choice(STEMS)] + rng.sample(SUFFIXES, rng.randint(0, 2))
            words.append(B.join(morphemes))
        lines.append(" ".join(words) + rng.choice([".", "?", " 42.", "!", ""]))
    return lines


def synthetic_english_lines(count: int, seed: int) -> list:
    rng = random.Random(seed)
    return [" ".join(rng.choices(ENGLISH, k=rng.randint(1, 9))) + "." for _ in range(count)]


@pytest.fixture(scope="module")
def corpus():
    segmented = synthetic_segmented_lines(400, seed=1)
    return {"segmented": segmented, "english": synthetic_english_lines(400, seed=2)}


@pytest.fixture(scope="module", params=["unigram", "bpe"])
def model(request, corpus, tmp_path_factory):
    path = tmp_path_factory.mktemp("spm") / f"{request.param}.model"
    return SentencePieceModel.train(
        corpus["english"] + corpus["segmented"], path, vocab_size=300, model_type=request.param
    )


def test_round_trip_restores_every_original_line(model, corpus):
    lines = corpus["english"] + corpus["segmented"] + ["a  b   c", "x" * 300]
    for line in lines:
        original = line.replace(B, "")
        assert pieces_to_text(model.encode(line)) == original
        assert model.decode(" ".join(model.encode(line))) == original


def test_no_piece_crosses_a_morpheme_boundary(model, corpus):
    for line in corpus["segmented"]:
        # where each morpheme boundary falls in the unsegmented text (SentencePiece's ▁ included)
        text = WORD_START + line.replace(" ", WORD_START)
        boundaries, offset = set(), 0
        for part in text.split(B)[:-1]:
            offset += len(part)
            boundaries.add(offset)
        piece_ends, offset = set(), 0
        for piece in model.encode(line):
            offset += len(piece)
            piece_ends.add(offset)
        assert boundaries <= piece_ends, (line, model.encode(line))


def test_boundary_marks_are_dropped_by_default_and_kept_on_request(model, corpus):
    line = corpus["segmented"][0]
    keeping = SentencePieceModel(model.model_path, keep_boundary_marks=True)
    assert B not in model.encode(line)
    assert keeping.encode(line).count(B) == line.count(B)
    assert [p for p in keeping.encode(line) if p != B] == model.encode(line)
    assert pieces_to_text(keeping.encode(line)) == line.replace(B, "")


def test_unseen_characters_stay_as_surface_pieces_and_are_counted(model):
    line = "Ω ev北京 Ωmega"
    pieces = model.encode(line)
    assert pieces_to_text(pieces) == line
    assert model.unknown_characters(pieces) == "Ω北京Ω"


def test_small_corpus_gets_a_smaller_vocabulary(tmp_path):
    trained = SentencePieceModel.train(["merhaba dünya", "hello world"], tmp_path / "m.model")
    assert 0 < trained.vocab_size < 8000


def test_vocabulary_smaller_than_the_alphabet_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="m.model.*Vocabulary size is smaller"):
        SentencePieceModel.train(["abcdefghij", "klmnopqrst"], tmp_path / "m.model", vocab_size=5)


def test_long_training_lines_are_not_skipped(tmp_path):
    # Only this 10,000-character line has "ж": SentencePiece's default limit (4,192 bytes)
    # would skip the line and leave "ж" out of the vocabulary.
    lines = ["kısa satır"] * 10 + ["ж" + "abc " * 2500]
    trained = SentencePieceModel.train(lines, tmp_path / "m.model", vocab_size=40)
    assert trained.unknown_characters(trained.encode("ж")) == ""


def test_training_is_deterministic(corpus, tmp_path):
    lines = corpus["english"] + corpus["segmented"]
    first = SentencePieceModel.train(lines, tmp_path / "a.model", vocab_size=300)
    second = SentencePieceModel.train(lines, tmp_path / "b.model", vocab_size=300)
    assert first.model_path.read_bytes() == second.model_path.read_bytes()


def test_reservoir_sample_is_uniform_seeded_and_in_order():
    lines = [f"line {i}" for i in range(1000)]
    sample = reservoir_sample(iter(lines), 100, seed=1)
    assert len(sample) == 100 and len(set(sample)) == 100
    assert sample == sorted(sample, key=lambda line: int(line.split()[1]))  # corpus order
    assert reservoir_sample(lines, 100, seed=1) == sample != reservoir_sample(lines, 100, seed=2)
    assert reservoir_sample(lines[:50], 100, seed=1) == lines[:50]
    # Uniform: over many seeds each line is drawn about 100 / 1000 of the time.
    counts = [0] * 1000
    for seed in range(400):
        for line in reservoir_sample(lines, 100, seed):
            counts[int(line.split()[1])] += 1
    first, last = sum(counts[:500]) / 20000, sum(counts[500:]) / 20000
    assert abs(first - 1) < 0.05 and abs(last - 1) < 0.05


def test_a_sample_is_seeded_and_used_only_above_its_size(tmp_path):
    """Up to `sample_size` lines SentencePiece sees them all (the same model as without a
    sample); above it a seeded sample: the same for the same seed, another for another seed,
    and not the model of all lines."""
    lines = synthetic_english_lines(600, seed=3) + synthetic_segmented_lines(600, seed=4)
    rng = random.Random(5)
    lines += [f"{rng.choice(STEMS)}{rng.randint(0, 10**6)} tek" for _ in range(400)]

    def trained(name: str, **options) -> bytes:
        model = SentencePieceModel.train(lines, tmp_path / name, vocab_size=300, **options)
        return model.model_path.read_bytes()

    everything = trained("all.model")
    assert trained("big-sample.model", sample_size=len(lines)) == everything
    sampled = trained("sample.model", sample_size=300)
    assert trained("sample-again.model", sample_size=300) == sampled != everything
    assert trained("sample-seed.model", sample_size=300, seed=2) != sampled


def test_unknown_model_type_is_rejected(tmp_path):
    with pytest.raises(ValueError, match="model_type"):
        SentencePieceModel.train(["a b"], tmp_path / "m.model", model_type="word")


def test_round_trip_on_all_of_tatoeba(tmp_path):
    if not TATOEBA.exists():
        pytest.skip(f"{TATOEBA} is absent (shared development data, not part of the repo)")
    english = (TATOEBA / "tatoeba.en").read_text(encoding="utf-8").splitlines()
    turkish = (TATOEBA / "tatoeba.tr").read_text(encoding="utf-8").splitlines()
    half = len(english) // 2
    # trained on the first half, so the second half also holds pieces and characters it never saw
    trained = SentencePieceModel.train(
        english[:half] + turkish[:half], tmp_path / "m.model", vocab_size=4000
    )
    lines = english + turkish
    encoded = trained.encode_lines(lines, num_threads=2)
    assert [i for i, (p, x) in enumerate(zip(encoded, lines)) if pieces_to_text(p) != x] == []
    seen_in_training = encoded[:half] + encoded[len(english) : len(english) + half]
    assert "".join(map(trained.unknown_characters, seen_in_training)) == ""
