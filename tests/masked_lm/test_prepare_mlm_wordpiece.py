"""scripts/prepare-mlm.sh --units wordpiece: a WordPiece vocabulary trained with `tokenizers`
(the vocabulary type of BERTurk and the BERT2D paper), text cut as fine-tuning cuts labelled
words, word starts from `##`, and BERT2D pretrained on it with whole-word masking and
Whole-Word Attention."""

import json

import pytest
import torch
from conftest import built_once, run_script, run_tool, tiny_mlm_task, tiny_mlm_train_args, venv_tool
from fairseq.data import Dictionary

from fairseq_struct.morph.units import PretrainingUnits, UnitCutter
from fairseq_struct.pieces.word_boundaries import word_start_lookup


@pytest.fixture(scope="module")
def wordpiece_run(pretraining_text, tmp_path_factory):
    def prepare(out):
        run_script(
            "prepare-mlm.sh",
            "--train",
            str(pretraining_text / "train.txt"),
            "--valid",
            str(pretraining_text / "valid.txt"),
            "--out",
            str(out / "data"),
            "--units",
            "wordpiece",
            "--vocab-size",
            "300",
        )

    return built_once(tmp_path_factory, "wordpiece-mlm", prepare) / "data"


def test_the_text_is_cut_by_the_trained_tokenizer_and_the_dictionary_is_its_vocabulary(
    wordpiece_run, pretraining_text
):
    from tokenizers import Tokenizer

    report = json.loads((wordpiece_run / "text" / "prepare_report.json").read_text())
    assert report["units"] == "tokenizer" and report["word_starts"] == "wordpiece"
    assert report["special_tokens"] == {
        "[PAD]": "<pad>", "[UNK]": "<unk>", "[CLS]": "<s>", "[SEP]": "</s>", "[MASK]": "<mask>"
    }  # fmt: skip
    tokenizer = Tokenizer.from_file(str(wordpiece_run / "tokenizer.json"))
    raw = (pretraining_text / "train.txt").read_text(encoding="utf-8").splitlines()
    encoded = (wordpiece_run / "text" / "train.txt").read_text(encoding="utf-8").splitlines()
    assert [" ".join(tokenizer.encode(line, add_special_tokens=False).tokens) for line in raw] == (
        encoded
    )
    assert any("##" in line for line in encoded)
    # fairseq's dictionary: <s> <pad> </s> <unk> for BERT's four, then the vocabulary in order.
    dictionary = Dictionary.load(str(wordpiece_run / "dict.txt"))
    vocabulary = tokenizer.get_vocab()
    assert len(dictionary) == len(vocabulary) == 300
    rest = [t for t, _ in sorted(vocabulary.items(), key=lambda x: x[1]) if t not in
            ("[PAD]", "[UNK]", "[CLS]", "[SEP]")]  # fmt: skip
    assert dictionary.symbols[4:] == ["<mask>" if t == "[MASK]" else t for t in rest]
    # Fine-tuning cuts labelled words into the same tokens.
    units = PretrainingUnits.from_data_dir(wordpiece_run)
    cut = UnitCutter(units).cut([line.split() for line in raw[:50]])
    assert [" ".join(u for word in sentence for u in word) for sentence in cut] == encoded[:50]


def test_bert2d_pretrains_on_wordpiece_with_words_from_the_continuation_mark(
    wordpiece_run, tmp_path
):
    task = tiny_mlm_task(wordpiece_run)
    dictionary = task.source_dictionary
    starts = word_start_lookup(dictionary)
    for index, symbol in enumerate(dictionary.symbols):
        assert bool(starts[index]) == (not symbol.startswith("##")), symbol
    # Whole-word masking masks every piece of a chosen word, none of another.
    batch = next(
        iter(task.get_batch_iterator(task.dataset("valid"), max_sentences=16).next_epoch_itr())
    )
    tokens = batch["net_input"]["src_tokens"]
    masked = batch["target"].ne(dictionary.pad())
    word_starts = starts[tokens]
    word = word_starts.long().cumsum(dim=1)
    for row in range(tokens.shape[0]):
        for w in word[row][masked[row]].unique():
            assert bool(masked[row][word[row] == w].all())
    run_tool(
        [
            venv_tool("fairseq-train"),
            *tiny_mlm_train_args(
                wordpiece_run, tmp_path, 3, "--arch", "bert2d_tiny", "--mask-strategy",
                "whole_word", "--whole-word-attention",
            ),
        ],
        cwd=tmp_path,
    )  # fmt: skip
    checkpoint = torch.load(str(tmp_path / "checkpoint_last.pt"), weights_only=False)
    assert checkpoint["cfg"]["model"].arch == "bert2d_tiny"
    assert checkpoint["cfg"]["model"].whole_word_attention  # word groups from `##` too
