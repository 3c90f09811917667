"""What an import keeps of its source besides the weights: BERT2D's limit in tokens (not its
word table's rows: a sequence has more tokens than words), and the vocabulary transformers would
use where `vocab.txt` and `tokenizer.json` disagree (said in a warning and in `hf_import.json`).
"""

import json
import shutil
from pathlib import Path

import pytest
import torch
from test_import_parity import assert_close, fairseq_outputs, load_imported
from tiny_hf_models import (
    NEEDS_TURKISH_TEXT,
    bert2d_reference,
    bert2d_reference_outputs,
    save_bert2d,
    turkish_lines,
)

from fairseq_struct.hf_import.importer import import_model

pytestmark = NEEDS_TURKISH_TEXT
WORDS, TOKENS, M = 8, 40, 3


@pytest.fixture(scope="module")
def short_word_table(tiny_hf_models, tmp_path_factory):
    """A BERT2D whose word table (8 rows) is shorter than its limit in tokens (40, its config's
    max_position_embeddings), imported; and its tokenizer."""
    from transformers import BertTokenizer

    root = tmp_path_factory.mktemp("short-word-table")
    tokenizer = BertTokenizer.from_pretrained(str(tiny_hf_models / "vocab-cased"))
    save_bert2d(root / "hf", tokenizer, subword_rows=M + 2, seed=31, words=WORDS, tokens=TOKENS)
    import_model(str(root / "hf"), root / "imported")
    return root, tokenizer


def long_words(tokenizer, count: int):
    """`count` words of letters only (one word for BERT, which splits at punctuation) of three
    pieces or more each (from the Turkish text)."""
    found = []
    for line in turkish_lines():
        found += [
            word for word in line.split() if word.isalpha() and len(tokenizer.tokenize(word)) >= 3
        ]
        if len(found) >= count:
            return found[:count]
    raise AssertionError("the text lacks long words")


def test_an_imported_bert2d_takes_more_tokens_than_its_word_table_has_rows(short_word_table):
    root, tokenizer = short_word_table
    report = json.loads((root / "imported" / "hf_import.json").read_text())
    assert report["tokens_per_sample"] == TOKENS
    assert report["tokens_per_sample_from"] == "config.json max_position_embeddings"
    assert report["options"]["max_positions"] == TOKENS
    assert report["options"]["max_word_positions"] == WORDS
    model, dictionary = load_imported(root / "imported")
    assert model.max_positions() == TOKENS  # what fairseq's batching lets through
    table = model.encoder.sentence_encoder.embed_positions.embedding.positions
    assert table.num_embeddings == WORDS

    # [CLS] + 5 words + [SEP]: 7 words (under the table's 8), more than 8 tokens; padded.
    words = long_words(tokenizer, 8)
    lines = [" ".join(words[:5]), " ".join(words[5:8])]
    batch = tokenizer(lines, padding=True, return_tensors="pt")
    lengths = batch["attention_mask"].sum(dim=1)
    assert int(lengths[0]) > WORDS and int(lengths[0]) <= TOKENS and int(lengths[1]) < lengths[0]
    reference, tables = bert2d_reference(root / "hf", M)
    out, word_ids, _ = bert2d_reference_outputs(reference, tables, tokenizer, batch)
    assert int(word_ids.max()) < WORDS
    features, logits = fairseq_outputs(model, dictionary, tokenizer, batch)
    mask = batch["attention_mask"].bool()
    assert_close(features, out.hidden_states[-1], mask, "hidden states")
    assert_close(logits, out.prediction_logits, mask, "MLM logits")

    # The export keeps both: the word table for the code, the tokens for the tokenizer's users.
    from transformers import AutoModelForMaskedLM

    from fairseq_struct.export.hf import main as export

    assert export([str(root / "imported" / "model.pt"), str(root / "exported")]) == 0
    exported = AutoModelForMaskedLM.from_pretrained(
        str(root / "exported"), trust_remote_code=True
    ).eval()
    assert exported.config.max_position_embeddings == WORDS
    with torch.no_grad():
        ours = exported(**batch, output_hidden_states=True)
    assert_close(ours.hidden_states[-1], out.hidden_states[-1], mask, "exported hidden states")
    # More words than the table has rows: a clear error, not an index error.
    many = tokenizer([" ".join(["ve"] * 12)], return_tensors="pt")
    with pytest.raises(ValueError, match=f"the model has {WORDS} positions"):
        exported(**many)


class _Tokenizer:
    def __init__(self, model_max_length: int) -> None:
        self.model_max_length = model_max_length


@pytest.mark.parametrize(
    "config, model_max_length, expected",
    [
        ({"max_position_embeddings": 40}, 30, (40, "config.json max_position_embeddings")),
        ({}, 30, (30, "the tokenizer's model_max_length")),
        ({}, int(1e30), (512, "BertConfig's default (no limit named by config or tokenizer)")),
    ],
)
def test_the_bert2d_token_limit_comes_from_the_config_then_the_tokenizer(
    tmp_path, config, model_max_length, expected
):
    from fairseq_struct.hf_import.layouts import bert2d_token_limit
    from fairseq_struct.hf_import.source import HFSource

    source = HFSource(tmp_path, {"model_type": "bert2d", **config})
    assert bert2d_token_limit(source, _Tokenizer(model_max_length)) == expected


def copy_with_vocab_txt(model: Path, out: Path) -> Path:
    """A copy of a model directory with a vocab.txt that agrees with its tokenizer.json, as the
    published BERT models have both."""
    shutil.copytree(model, out)
    vocabulary = json.loads((out / "tokenizer.json").read_text("utf-8"))["model"]["vocab"]
    assert sorted(vocabulary.values()) == list(range(len(vocabulary)))
    in_order = sorted(vocabulary, key=vocabulary.__getitem__)
    (out / "vocab.txt").write_text("\n".join(in_order) + "\n", "utf-8")
    return out


def test_vocab_txt_that_disagrees_with_tokenizer_json_is_reported_and_not_used(
    tiny_hf_models, tmp_path
):
    from transformers import AutoTokenizer

    from fairseq_struct.hf_import.vocabulary import vocabulary_files_disagreement

    name = "bert-pretraining"
    source = copy_with_vocab_txt(tiny_hf_models / "hf" / name, tmp_path / "source")
    assert vocabulary_files_disagreement(source, AutoTokenizer.from_pretrained(str(source))) is None
    lines = (source / "vocab.txt").read_text("utf-8").splitlines()
    lines[11], lines[12] = lines[12], lines[11]
    (source / "vocab.txt").write_text("\n".join(lines) + "\n", "utf-8")

    with pytest.warns(UserWarning) as warned:
        report = import_model(str(source), tmp_path / "imported")
    messages = [str(warning.message) for warning in warned]
    expected = (
        f"vocab.txt and tokenizer.json disagree: id 11 is {lines[11]!r} in vocab.txt "
        f"({len(lines)} tokens) but {lines[12]!r} in tokenizer.json ({len(lines)} tokens); "
        "the import uses tokenizer.json, as transformers' AutoTokenizer does"
    )
    assert any(expected in message for message in messages), messages
    assert report["vocabulary_files_disagree"] == {
        "used": "tokenizer.json",
        "not_used": "vocab.txt",
        "first_difference": {"id": 11, "vocab.txt": lines[11], "tokenizer.json": lines[12]},
        "sizes": {"vocab.txt": len(lines), "tokenizer.json": len(lines)},
    }
    written = json.loads((tmp_path / "imported" / "hf_import.json").read_text())
    assert written["vocabulary_files_disagree"] == report["vocabulary_files_disagree"]
    # tokenizer.json's vocabulary: the dictionary and weights of the import of the unedited copy.
    agreeing = tiny_hf_models / "imported" / name
    assert (
        json.loads((agreeing / "hf_import.json").read_text())["vocabulary_files_disagree"] is None
    )
    for file in ("dict.txt", "tokenizer.json"):
        assert (tmp_path / "imported" / file).read_text() == (agreeing / file).read_text()
    ours = torch.load(tmp_path / "imported" / "model.pt", weights_only=False)["model"]
    theirs = torch.load(agreeing / "model.pt", weights_only=False)["model"]
    key = "encoder.sentence_encoder.embed_tokens.weight"
    assert torch.equal(ours[key], theirs[key])


def test_a_vocab_txt_longer_than_tokenizer_json_differs_past_its_end(tiny_hf_models, tmp_path):
    from transformers import AutoTokenizer

    from fairseq_struct.hf_import.vocabulary import vocabulary_files_disagreement

    source = copy_with_vocab_txt(tiny_hf_models / "hf" / "bert-masked-lm", tmp_path / "source")
    tokenizer = AutoTokenizer.from_pretrained(str(source))
    assert vocabulary_files_disagreement(source, tokenizer) is None
    size = len(tokenizer.get_vocab())
    with open(source / "vocab.txt", "a", encoding="utf-8") as file:
        file.write("ekstra\n")
    found = vocabulary_files_disagreement(source, tokenizer)
    assert found["first_difference"] == {"id": size, "vocab.txt": "ekstra", "tokenizer.json": None}
    assert found["sizes"] == {"vocab.txt": size + 1, "tokenizer.json": size}
