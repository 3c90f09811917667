"""downstream.prepare: from the data sets' raw formats to binarized fine-tuning data."""

import json

from fairseq.data import Dictionary, data_utils

from fairseq_struct.downstream.prepare import main
from fairseq_struct.downstream.readers import UPOS_TAGS


def _run(task, run, tmp_path, *options):
    out = tmp_path / "out"
    code = main(
        [
            task,
            "--pretraining-data",
            str(run),
            "--out-dir",
            str(out),
            "--max-positions",
            "32",
            *map(str, options),
        ]
    )
    return code, out


def _run_ner(run, tmp_path, valid="valid.conll"):
    """`prepare ner` on tmp_path/train.conll, validated on tmp_path/<valid>."""
    return _run(
        "ner", run, tmp_path, "--train", tmp_path / "train.conll", "--valid", tmp_path / valid
    )


def _items(out, name, split):
    dictionary = Dictionary.load(str(out / name / "dict.txt"))
    dataset = data_utils.load_indexed_dataset(str(out / name / split), dictionary)
    return dictionary, [dataset[i].tolist() for i in range(len(dataset))]


def test_ner_labels_align_with_tokens_and_new_words_extend_the_words_dictionary(words, tmp_path):
    (tmp_path / "train.conll").write_text(
        "Öğretmen\tB-PER\nBüyükköyzz'de\tB-LOC\nuyudu\tO\n.\tO\n\nKedi\tO\nuyudu\tO\n", "utf-8"
    )
    (tmp_path / "valid.conll").write_text("Doktor\tB-PER\ngeldi\tO\n", "utf-8")
    code, out = _run_ner(words, tmp_path)
    assert code == 0
    report = json.loads((out / "finetune.json").read_text())
    assert report["labels"] == ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    assert report["tokens_are_words"] is True
    tokens_dict, tokens = _items(out, "input0", "train")
    labels_dict, labels = _items(out, "labels", "train")
    assert [len(t) for t in tokens] == [len(row) for row in labels]
    first = [tokens_dict[i] for i in tokens[0]]
    assert first == ["<s>", "Öğretmen", "Büyükköyzz", "'", "de", "uyudu", ".", "</s>"]
    assert [labels_dict[i] for i in labels[0]] == [
        "<pad>",
        "B-PER",
        "B-LOC",
        "<pad>",
        "<pad>",
        "O",
        "O",
        "<pad>",
    ]
    pretraining = Dictionary.load(str(words / "dict.txt"))
    assert tokens_dict.symbols[: len(pretraining)] == pretraining.symbols  # ids unchanged
    assert "Büyükköyzz" in tokens_dict.symbols[len(pretraining) :]  # a new word: its own id


def test_an_entity_type_the_training_split_never_has_is_kept_and_named(words, tmp_path, caplog):
    # Cross-corpus evaluation: the test set's LOC entities stay gold entities (misses for a
    # model that never learnt LOC) instead of stopping the preparation.
    (tmp_path / "train.conll").write_text("Ali\tB-PER\ngeldi\tO\n", "utf-8")
    (tmp_path / "valid.conll").write_text("Ali\tB-PER\n\nAnkara\tB-LOC\n", "utf-8")
    code, out = _run_ner(words, tmp_path)
    assert code == 0
    report = json.loads((out / "finetune.json").read_text())
    assert report["labels"] == ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    assert report["labels_not_in_training"] == {"valid": ["LOC"]}
    assert "the valid split has entity types that the training split never has: LOC" in caplog.text
    labels_dict, labels = _items(out, "labels", "valid")
    assert [labels_dict[i] for i in labels[1] if i != labels_dict.pad()] == ["B-LOC"]


def test_pos_labels_are_the_17_upos_tags_whatever_the_training_split_has(words, tmp_path):
    # UD BOUN's test set has SCONJ, which UD IMST's training split lacks.
    def conllu(rows):
        lines = [
            f"{i}\t{form}\t_\t{tag}\t_\t_\t_\t_\t_\t_" for i, (form, tag) in enumerate(rows, 1)
        ]
        return "# text = x\n" + "\n".join(lines) + "\n\n"

    (tmp_path / "train.conllu").write_text(conllu([("Ali", "PROPN"), ("geldi", "VERB")]), "utf-8")
    (tmp_path / "test.conllu").write_text(conllu([("Gelince", "SCONJ"), ("gör", "VERB")]), "utf-8")
    code, out = _run(
        "pos", words, tmp_path, "--train", tmp_path / "train.conllu", "--valid",
        tmp_path / "train.conllu", "--test", tmp_path / "test.conllu",
    )  # fmt: skip
    assert code == 0
    report = json.loads((out / "finetune.json").read_text())
    assert report["labels"] == sorted(UPOS_TAGS) and len(report["labels"]) == 17
    assert report["labels_not_in_training"] == {"test": ["SCONJ"]}
    labels_dict, labels = _items(out, "labels", "test")
    assert [labels_dict[i] for i in labels[0] if i != labels_dict.pad()] == ["SCONJ", "VERB"]


def test_a_pos_tag_outside_upos_is_an_error_naming_file_and_line(words, tmp_path, capsys):
    row = "1\tAli\t_\tNNP\t_\t_\t_\t_\t_\t_\n\n"
    (tmp_path / "train.conllu").write_text(row, "utf-8")
    code, _ = _run(
        "pos", words, tmp_path, "--train", tmp_path / "train.conllu", "--valid",
        tmp_path / "train.conllu",
    )  # fmt: skip
    assert code == 1
    assert f"{tmp_path / 'train.conllu'}:1: 'NNP' is not a universal POS tag" in (
        capsys.readouterr().err
    )


def test_a_tag_that_is_not_iob_is_an_error_naming_file_and_line(words, tmp_path, capsys):
    (tmp_path / "train.conll").write_text("Ali\tPERSON\ngeldi\tO\n", "utf-8")
    code, _ = _run_ner(words, tmp_path, valid="train.conll")
    assert code == 1
    assert f"{tmp_path / 'train.conll'}:1: tag 'PERSON' is not IOB" in capsys.readouterr().err


def test_iob1_entity_starts_are_repaired_and_counted(words, tmp_path):
    (tmp_path / "train.conll").write_text("Ali\tI-PER\nVeli\tI-PER\ngeldi\tO\n", "utf-8")
    code, out = _run_ner(words, tmp_path, valid="train.conll")
    assert code == 0
    report = json.loads((out / "finetune.json").read_text())
    assert report["splits"]["train"]["tags_converted_to_iob2"] == 1
    labels_dict, labels = _items(out, "labels", "train")
    assert [labels_dict[i] for i in labels[0] if i != labels_dict.pad()] == ["B-PER", "I-PER", "O"]


def test_sentiment_uses_fairseqs_sentence_prediction_layout(words, tmp_path):
    (tmp_path / "t.olumlu").write_text("kedi uyudu .\n\nçocuk geldi .\n", "utf-8")
    (tmp_path / "t.olumsuz").write_text("kedi uyumadı .\n", "utf-8")
    code, out = _run(
        "sentiment",
        words,
        tmp_path,
        "--train",
        tmp_path / "t.olumlu",
        tmp_path / "t.olumsuz",
        "--valid",
        tmp_path / "t.olumsuz",
    )
    assert code == 0
    tokens_dict, tokens = _items(out, "input0", "train")
    label_dict, labels = _items(out, "label", "train")
    assert [tokens_dict[i] for i in tokens[0]] == [
        "kedi",
        "uyudu",
        ".",
        "</s>",
    ]  # <s>: --init-token
    assert [[label_dict[i] for i in item] for item in labels] == [
        ["olumlu", "</s>"],
        ["olumlu", "</s>"],
        ["olumsuz", "</s>"],
    ]
    report = json.loads((out / "finetune.json").read_text())
    assert report["splits"]["train"]["read"]["skipped"] == {"empty line": 1}


def test_qa_windows_point_at_the_answer_and_a_carved_valid_split_keeps_contexts_whole(
    words, tmp_path
):
    paragraphs = [
        {
            "context": f"Kedi {i}. bahçede uyudu . Çocuk okula gitti .",
            "qas": [
                {
                    "id": f"{i}a",
                    "question": "Kedi nerede uyudu ?",
                    "answers": [{"text": "bahçede", "answer_start": str(len(f"Kedi {i}. "))}],
                },
                {
                    "id": f"{i}b",
                    "question": "Çocuk nereye gitti ?",
                    "answers": [
                        {"text": "okula", "answer_start": len(f"Kedi {i}. bahçede uyudu . Çocuk ")}
                    ],
                },
            ],
        }
        for i in range(10)
    ]
    (tmp_path / "qa.json").write_text(
        json.dumps({"data": [{"title": "t", "paragraphs": paragraphs}]})
    )
    code, out = _run(
        "qa", words, tmp_path, "--train", tmp_path / "qa.json", "--valid-fraction", "0.2"
    )
    assert code == 0
    train = json.loads((out / "train.qa.json").read_text())
    valid = json.loads((out / "valid.qa.json").read_text())
    assert len(valid["questions"]) == 4 and len(train["questions"]) == 16
    assert not set(train["contexts"]) & set(valid["contexts"])
    tokens_dict, tokens = _items(out, "input0", "train")
    spans = data_utils.load_indexed_dataset(str(out / "spans" / "train"), None)
    for index, feature in enumerate(train["features"]):
        start, end = spans[index].tolist()
        question = train["questions"][feature["question"]]
        context = train["contexts"][question["context"]]
        first, last = start - feature["context_offset"], end - feature["context_offset"]
        assert (
            context[feature["spans"][first][0] : feature["spans"][last][1]]
            == question["answers"][0]
        )
        assert tokens[index][0] == tokens_dict.bos()


def test_an_answer_at_the_wrong_offset_names_the_question(words, tmp_path, capsys):
    data = {
        "data": [
            {
                "title": "t",
                "paragraphs": [
                    {
                        "context": "Kedi bahçede uyudu .",
                        "qas": [
                            {
                                "id": 42,
                                "question": "Kedi nerede uyudu ?",
                                "answers": [{"text": "bahçede", "answer_start": "4"}],
                            }
                        ],
                    }
                ],
            }
        ]
    }
    (tmp_path / "qa.json").write_text(json.dumps(data))
    code, _ = _run(
        "qa", words, tmp_path, "--train", tmp_path / "qa.json", "--valid", tmp_path / "qa.json"
    )
    assert code == 1
    assert "42" in capsys.readouterr().err
