"""`prepare-mlm --lang de`: German text without Zemberek, in each unit kind, on the suite's German
text (tests/german_text.py). Pieces through scripts/prepare-mlm.sh (conftest's `german_pieces`,
which the German end-to-end test pretrains on); wordpiece and words through the command's
`main`; `--mode morph` refused with what to use instead."""

import json
import subprocess
from pathlib import Path

import pytest
from conftest import REPO_ROOT, script_environment

from fairseq_struct.masked_lm.prepare import main, parse_args
from fairseq_struct.morph.units import PretrainingUnits, UnitCutter
from fairseq_struct.pieces.markers import WORD_START

UMLAUTS = set("äöüÄÖÜß")


def _raw_lines(german_text: Path, split: str = "train"):
    return (german_text / f"{split}.txt").read_text(encoding="utf-8").splitlines()


def _prepare(german_text: Path, data: Path, *options: str) -> Path:
    """`main` into DATA/text, with the files prepare-mlm.sh puts beside the binarized splits
    (dict.txt, tokenizer.json) copied up to DATA: the layout fine-tuning and export read."""
    train, valid = german_text / "train.txt", german_text / "valid.txt"
    common = ["--train", str(train), "--valid", str(valid), "--out-dir", str(data / "text")]
    assert main([*common, "--lang", "de", *options]) == 0
    for name in ("dict.txt", "tokenizer.json"):
        if (data / "text" / name).exists():
            (data / name).write_bytes((data / "text" / name).read_bytes())
    return data


def _encoded(data: Path, split: str = "train"):
    lines = (data / "text" / f"{split}.txt").read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line]


def _cut_like_pretraining(data_dir: Path, raw, encoded) -> None:
    """Fine-tuning cuts labelled words (downstream.prepare's UnitCutter) into the same units as
    the pretraining text, German words included."""
    cut = UnitCutter(PretrainingUnits.from_data_dir(data_dir)).cut([line.split() for line in raw])
    assert [" ".join(unit for word in sentence for unit in word) for sentence in cut] == encoded


def test_pieces_spell_the_german_text_again_without_segmentation(german_pieces, german_text):
    report = json.loads((german_pieces / "text" / "prepare_report.json").read_text())
    assert (report["units"], report["mode"], report["lang"]) == ("pieces", "bpe", "de")
    assert "segmentation" not in report  # no Zemberek: German is never segmented
    assert not (german_pieces / "text" / "segmentation_cache.sqlite").exists()
    raw = _raw_lines(german_text)
    encoded = (german_pieces / "text" / "train.txt").read_text(encoding="utf-8").splitlines()
    assert len(encoded) == len(raw) and encoded.count("") == raw.count("") == 79  # documents
    assert ["".join(line.split()).replace(WORD_START, " ").strip() for line in encoded] == raw
    assert UMLAUTS <= set((german_pieces / "dict.txt").read_text(encoding="utf-8"))
    sentences = [line for line in raw if line]
    _cut_like_pretraining(german_pieces, sentences, [line for line in encoded if line])


def test_cased_wordpiece_keeps_german_case_and_umlauts(german_text, tmp_path):
    from tokenizers import Tokenizer

    data = _prepare(german_text, tmp_path / "data", "--units", "wordpiece", "--vocab-size", "300")
    report = json.loads((data / "text" / "prepare_report.json").read_text())
    assert report["lang"] == "de"
    settings = report["wordpiece"]
    assert (settings["lowercase"], settings["strip_accents"]) == (False, False)
    tokenizer = Tokenizer.from_file(str(data / "tokenizer.json"))
    raw = [line for line in _raw_lines(german_text) if line]
    encoded = _encoded(data)
    assert [" ".join(tokenizer.encode(line, add_special_tokens=False).tokens) for line in raw] == (
        encoded
    )
    # Every character survives: the pieces without `##` spell each line without its spaces.
    assert ["".join(line.split()).replace("##", "") for line in encoded] == [
        "".join(line.split()) for line in raw
    ]
    _cut_like_pretraining(data, raw, encoded)


def test_uncased_german_wordpiece_lowercases_but_keeps_umlauts(german_text, tmp_path):
    """BERT's uncased rule strips accents: möchten would become mochten (another word), schön
    schon. German's uncased vocabulary keeps them; the exported BERT tokenizer cuts alike."""
    data = _prepare(
        german_text, tmp_path / "data", "--units", "wordpiece", "--lowercase", "--vocab-size", "300"
    )
    report = json.loads((data / "text" / "prepare_report.json").read_text())
    settings = report["wordpiece"]
    assert (settings["lowercase"], settings["strip_accents"]) == (True, False)
    raw = [line for line in _raw_lines(german_text) if line]
    encoded = _encoded(data)
    assert ["".join(line.split()).replace("##", "") for line in encoded] == [
        "".join(line.lower().split()) for line in raw
    ]
    assert any("möchten" in line for line in raw)  # the grammar's word, kept as it is
    characters = set("".join(encoded))
    assert set("äöüß") <= characters and not set("ÄÖÜ") & characters

    # The tokenizer that export.hf saves beside a model pretrained on this vocabulary.
    from fairseq_struct.export.hf_tokenizer_units import _tokenizer

    exported = _tokenizer(data)
    assert [" ".join(exported.tokenize(line)) for line in raw[:100]] == encoded[:100]


@pytest.mark.parametrize(
    "options, strip",
    [
        (["--lang", "de"], False),  # German keeps its umlauts
        (["--lang", "de", "--strip-accents"], True),  # as dbmdz's uncased German BERT
        (["--lang", "tr"], True),  # BERT's rule, as before for every other language
        (["--lang", "tr", "--keep-accents"], False),
    ],
)
def test_accents_of_an_uncased_vocabulary_follow_the_language_unless_asked(options, strip):
    args = parse_args(
        ["--train", "t", "--valid", "v", "--out-dir", "o", "--units", "wordpiece", "--lowercase"]
        + options
    )
    assert args.strip_accents is strip
    cased = parse_args(["--train", "t", "--valid", "v", "--out-dir", "o", "--units", "wordpiece"])
    assert cased.strip_accents is False


def test_accent_options_need_an_uncased_wordpiece_vocabulary(capsys):
    with pytest.raises(SystemExit) as stop:
        parse_args(["--train", "t", "--valid", "v", "--out-dir", "o", "--keep-accents"])
    assert stop.value.code == 2
    assert "go with --units wordpiece --lowercase" in capsys.readouterr().err


def test_words_are_moses_tokens_by_german_rules(german_text, tmp_path):
    data = _prepare(german_text, tmp_path / "data", "--units", "words")
    assert json.loads((data / "text" / "prepare_report.json").read_text())["lang"] == "de"
    raw = [line for line in _raw_lines(german_text) if line]
    encoded = _encoded(data)
    by_line = dict(zip(raw, encoded))
    line = next(line for line in raw if line.startswith("Der Vorstand trifft sich am "))
    # German's nonbreaking prefixes: an ordinal keeps its full stop (English rules split it).
    day = line.split()[5]
    assert day.endswith(".") and by_line[line].split()[5] == day
    line = next(line for line in raw if line.startswith("Dr. "))
    assert " z. B. " in by_line[line] and by_line[line].startswith("Dr. ")
    line = next(line for line in raw if line.startswith("„"))
    assert by_line[line].startswith("„ Das Wetter") and "“ , sagte" in by_line[line]
    # Every word of every split is in the dictionary (BERT-ELMo embeds each by its characters).
    words = {entry.split(" ")[0] for entry in (data / "dict.txt").read_text("utf-8").splitlines()}
    valid = " ".join(_encoded(data, "valid")).split()
    assert set(" ".join(encoded).split()) | set(valid) <= words
    # Labelled words are cut by the same rules, word by word.
    cut = UnitCutter(PretrainingUnits.from_data_dir(data)).cut([["22.", "z.", "B."]])
    assert cut == [[["22."], ["z."], ["B."]]]


def test_morph_mode_for_german_says_what_to_use_instead(german_text, tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        parse_args(["--train", "t", "--valid", "v", "--out-dir", "o", "--mode", "morph",
                    "--lang", "de"])  # fmt: skip
    assert stop.value.code == 2
    message = capsys.readouterr().err
    assert "none for 'de'" in message
    assert "use --mode bpe (SentencePiece pieces, the default), --units wordpiece or " in message
    # The script stops there: nothing written, the same message.
    result = subprocess.run(
        ["bash", str(REPO_ROOT / "scripts" / "prepare-mlm.sh"), "--train",
         str(german_text / "train.txt"), "--valid", str(german_text / "valid.txt"),
         "--out", str(tmp_path / "out"), "--mode", "morph", "--lang", "de"],
        env=script_environment(), capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "none for 'de': use --mode bpe" in result.stderr
    assert not (tmp_path / "out").exists()
