"""prepare: raw parallel text -> pieces that stock fairseq-preprocess binarizes (design.md §3)."""

import json
import logging
import math
import subprocess

import pytest
from conftest import REPO_ROOT, run_tool, venv_tool

from fairseq_struct.morph import prepare
from fairseq_struct.pieces.markers import MORPHEME_BOUNDARY as B
from fairseq_struct.pieces.markers import WORD_START, pieces_to_text

PAIRS = [
    ("We could not see them.", "Göremediklerimizden biri oydu."),
    ("She lives in Istanbul.", "İstanbul'da yaşıyor."),
    ("The children read books.", "Çocuklar kitap okudular."),
    ("I will never forget 2013.", "2013 yılını asla unutmayacağım."),
    ("According to Dan, Linda left.", "Dan'a göre, Linda gitti."),
    ("A cat sat on the chair.", "Sandalyeye bir kedi oturdu."),
    ("How much money do you have?", "Ne kadar paran var?"),
    ("Our houses are big.", "Evlerimiz büyük."),
    ("They came from school.", "Okuldan geldiler."),
    ("Visit www.example.com now!", "Hemen www.example.com adresine bakın!"),
    ("The teachers are in the garden.", "Öğretmenler bahçede."),
    ("I am reading a newspaper.", "Gazete okuyorum."),
]

pytestmark = pytest.mark.filterwarnings("ignore:notifyAll:DeprecationWarning")  # in zemberek


@pytest.fixture(autouse=True)
def restore_logging():
    """prepare.main configures the root logger for the command line; undo it after each test."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def make_corpus(directory):
    """A few hundred real sentence pairs, with two bad train pairs that must be dropped (an
    empty line, a line of spaces)."""
    splits = {
        "train": [(f"{i}. {en}", f"{i}. {tr}") for i in range(25) for en, tr in PAIRS],
        "valid": [(f"{en} ({i})", f"{tr} ({i})") for i in range(3) for en, tr in PAIRS],
        "test": [(f"{i}: {en}", f"{i}: {tr}") for i in range(3) for en, tr in PAIRS],
    }
    splits["train"] += [("An empty target.", ""), ("   ", "Boşluklar.")]
    for split, pairs in splits.items():
        for side, lang in enumerate(("en", "tr")):
            text = "".join(pair[side] + "\n" for pair in pairs)
            (directory / f"{split}.{lang}").write_text(text, encoding="utf-8")
    return splits


def prepare_args(raw, out, mode, *extra):
    return [
        "--src-lang", "en", "--tgt-lang", "tr",
        "--train", str(raw / "train"), "--valid", str(raw / "valid"), "--test", str(raw / "test"),
        "--mode", mode, "--vocab-size", "300", "--out-dir", str(out), *extra,
    ]  # fmt: skip


def binarize(out, tgt_lang, cwd):
    """Stock fairseq-preprocess (joined dictionary) on the pieces `prepare` wrote into `out`,
    and every split's binary files hold data."""
    run_tool(
        [
            venv_tool("fairseq-preprocess"),
            "--source-lang", "en", "--target-lang", tgt_lang,
            "--trainpref", out / "train.sp", "--validpref", out / "valid.sp",
            "--testpref", out / "test.sp", "--joined-dictionary",
            "--destdir", out, "--workers", "1",
        ],
        cwd=cwd,
    )  # fmt: skip
    for split in ("train", "valid", "test"):
        for lang in ("en", tgt_lang):
            assert (out / f"{split}.en-{tgt_lang}.{lang}.bin").stat().st_size > 0


@pytest.mark.parametrize("mode", ["bpe", "morph"])
def test_prepare_writes_pieces_that_stock_fairseq_preprocess_binarizes(tmp_path, mode, capsys):
    if mode == "morph":
        pytest.importorskip("zemberek", reason="zemberek-python is needed for --mode morph")
    raw = tmp_path / "raw"
    raw.mkdir()
    splits = make_corpus(raw)
    out = tmp_path / "bin"

    assert prepare.main(prepare_args(raw, out, mode)) == 0

    kept = dict(splits, train=splits["train"][:-2])
    for split, pairs in kept.items():
        for side, lang in enumerate(("en", "tr")):
            encoded = (out / f"{split}.sp.{lang}").read_text(encoding="utf-8").splitlines()
            assert [pieces_to_text(line) for line in encoded] == [pair[side] for pair in pairs]
            if split != "train":
                raw_copy = (out / f"{split}.raw.{lang}").read_text(encoding="utf-8")
                assert raw_copy.splitlines() == [pair[side] for pair in pairs]

    report = json.loads((out / "prepare_report.json").read_text(encoding="utf-8"))
    train = report["splits"]["train"]
    assert (train["pairs_read"], train["pairs_kept"]) == (len(splits["train"]), len(kept["train"]))
    assert train["dropped"] == [
        f"{raw / 'train.tr'}:{len(kept['train']) + 1}: empty line",
        f"{raw / 'train.en'}:{len(kept['train']) + 2}: empty line",
    ]
    if mode == "morph":
        segmentation = report["segmentation"]
        assert segmentation["lines"] == sum(len(pairs) for pairs in kept.values())
        assert 0 < segmentation["split_word_share"] < 1
        # The segmented references, kept for morphological density, spell the raw lines.
        segmented = (out / "test.seg.tr").read_text(encoding="utf-8").splitlines()
        assert [line.replace(B, "") for line in segmented] == [pair[1] for pair in kept["test"]]
        assert any(B in line for line in segmented)
    else:
        assert report["segmentation"] is None
        assert not (out / "test.seg.tr").exists()
    # The decoding length limit fitted to the training pieces that fairseq reads: with 300
    # pairs, 99.9 % is all of them, so the longest target relative to its source sets it.
    lengths = [
        [len(line.split()) + 1 for line in (out / f"train.sp.{lang}").read_text().splitlines()]
        for lang in ("en", "tr")
    ]
    expected_a = max(0, *(math.ceil((t - 10) / s * 10) for s, t in zip(*lengths))) / 10
    assert report["decoding_length"] == {
        "max_len_a": expected_a,
        "max_len_b": 10,
        "coverage": 0.999,
    }
    summary = capsys.readouterr().out
    assert "train: 300 pairs kept, 2 dropped (2 empty line)" in summary
    binarize(out, "tr", tmp_path)


def test_whitespace_of_real_test_sets_is_normalised_and_the_raw_text_kept(tmp_path, capsys):
    """Lines shaped like FLORES-200 tur_Latn.devtest's (a space at an edge, a double space) and
    a tab and a no-break space: every split is prepared; the pieces spell the normalised line,
    `*.raw.*` keeps the untouched one, the report counts them, and sacreBLEU's scores against
    the untouched reference equal those against the normalised one."""
    import sacrebleu

    raw = tmp_path / "raw"
    raw.mkdir()
    splits = make_corpus(raw)
    odd = {
        0: " Göremediklerimizden biri oydu.",  # leading space
        1: "İstanbul'da yaşıyor. ",  # trailing space
        2: "Çocuklar  kitap okudular.",  # double space
        3: "2013 yılını\tasla unutmayacağım.",  # tab
        4: "Dan'a göre,\u00a0Linda gitti.",  # no-break space
    }
    test_tr = [pair[1] for pair in splits["test"]]
    for number, line in odd.items():
        test_tr[number] = line
    (raw / "test.tr").write_text("".join(line + "\n" for line in test_tr), encoding="utf-8")
    train_en = [pair[0] for pair in splits["train"]]
    train_en[0] = "  " + train_en[0]
    (raw / "train.en").write_text("".join(line + "\n" for line in train_en), encoding="utf-8")
    out = tmp_path / "bin"

    assert prepare.main(prepare_args(raw, out, "bpe")) == 0

    normalised = [" ".join(line.split()) for line in test_tr]
    encoded = (out / "test.sp.tr").read_text(encoding="utf-8").splitlines()
    assert [pieces_to_text(line) for line in encoded] == normalised
    assert (out / "test.raw.tr").read_text(encoding="utf-8").splitlines() == test_tr
    report = json.loads((out / "prepare_report.json").read_text(encoding="utf-8"))
    test_report = report["splits"]["test"]
    assert test_report["whitespace_normalised"] == len(odd)
    assert test_report["whitespace_examples"] == [f"{raw / 'test.tr'}:{n + 1}" for n in odd]
    train_report = report["splits"]["train"]
    assert train_report["whitespace_normalised"] == 1 + 1  # the first line, the line of spaces
    assert train_report["pairs_kept"] == len(splits["train"]) - 2
    assert "test: 36 pairs kept, 0 dropped, 0 words over 100 characters, 5 lines with " in (
        capsys.readouterr().out
    )
    hypotheses = [line.replace("oydu", "idi") for line in normalised]  # not a perfect system
    for metric in (sacrebleu.metrics.BLEU(), sacrebleu.metrics.CHRF(word_order=2)):
        against_raw = metric.corpus_score(hypotheses, [test_tr]).score
        against_normalised = metric.corpus_score(hypotheses, [normalised]).score
        assert against_raw == against_normalised < 100


def test_sentencepiece_trains_on_a_seeded_sample_above_spm_sample(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    make_corpus(raw)
    reports, models = [], []
    for name, extra in (("all", []), ("sample", ["--spm-sample", "100"])):
        out = tmp_path / name
        assert prepare.main(prepare_args(raw, out, "bpe", *extra)) == 0
        reports.append(json.loads((out / "prepare_report.json").read_text())["sentencepiece"])
        models.append((out / "spm.model").read_bytes())
    every_line, sampled = reports
    assert (every_line["training_lines"], every_line["training_sample"]) == (600, 600)
    assert (sampled["training_lines"], sampled["training_sample"]) == (600, 100)
    assert models[0] != models[1]
    assert every_line["training_fingerprint"] != sampled["training_fingerprint"]


def test_morph_mode_pieces_end_at_morpheme_boundaries(tmp_path):
    pytest.importorskip("zemberek", reason="zemberek-python is needed for --mode morph")
    raw = tmp_path / "raw"
    raw.mkdir()
    make_corpus(raw)
    out = tmp_path / "bin"
    assert prepare.main(prepare_args(raw, out, "morph", "--keep-boundary-marks")) == 0
    lines = (out / "train.sp.tr").read_text(encoding="utf-8").splitlines()
    assert all(piece == B or B not in piece for line in lines for piece in line.split())
    # the pieces of "Göremediklerimizden", the second word of the first line, with their marks
    words = "".join(lines[0].split()).split(WORD_START)
    assert words[2].split(B) == ["Gör", "eme", "dik", "ler", "imiz", "den"]


def test_bad_valid_pair_stops_with_file_and_line(tmp_path, capsys):
    raw = tmp_path / "raw"
    raw.mkdir()
    make_corpus(raw)
    with open(raw / "valid.tr", "a", encoding="utf-8") as file:
        file.write("\n")
    with open(raw / "valid.en", "a", encoding="utf-8") as file:
        file.write("One more line.\n")
    assert prepare.main(prepare_args(raw, tmp_path / "bin", "bpe")) == 1
    assert f"error: {raw / 'valid.tr'}:{3 * len(PAIRS) + 1}: empty line" in capsys.readouterr().err
    assert not (tmp_path / "bin" / "spm.model").exists()


def test_morph_mode_needs_a_segmenter_for_the_target_language(tmp_path, capsys):
    with pytest.raises(SystemExit):
        prepare.parse_args(prepare_args(tmp_path, tmp_path, "morph") + ["--tgt-lang", "fi"])
    assert "no segmenter for --tgt-lang 'fi'" in capsys.readouterr().err


def test_script_runs_prepare_and_fairseq_preprocess(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    make_corpus(raw)
    out = tmp_path / "data-bin"
    script = REPO_ROOT / "scripts" / "prepare-en-tr.sh"
    run_tool(
        [
            "bash", script, "--train", raw / "train", "--valid", raw / "valid",
            "--test", raw / "test", "--mode", "bpe", "--vocab-size", "300", "--out", out,
        ],
        cwd=tmp_path,
    )  # fmt: skip
    for name in ("spm.model", "dict.en.txt", "test.en-tr.tr.bin", "test.raw.tr"):
        assert (out / name).exists(), name


def test_script_without_prefixes_prints_usage():
    script = REPO_ROOT / "scripts" / "prepare-en-tr.sh"
    result = subprocess.run(["bash", script], capture_output=True, text=True)
    assert result.returncode == 2
    assert "usage: prepare-parallel.sh --tgt-lang tr|iu --train PREFIX" in result.stderr


def test_fine_tuning_data_reuses_the_sentencepiece_model_and_dictionaries(tmp_path):
    """Fine-tuning data must mean the same token ids as the pretraining data: the script encodes
    with the earlier spm.model and binarizes with the earlier dictionaries."""
    raw = tmp_path / "raw"
    raw.mkdir()
    make_corpus(raw)
    script = REPO_ROOT / "scripts" / "prepare-en-tr.sh"
    splits = ["--train", raw / "train", "--valid", raw / "valid", "--test", raw / "test"]
    pretrain, finetune = tmp_path / "pretrain", tmp_path / "finetune"
    run_tool(
        ["bash", script, *splits, "--mode", "bpe", "--vocab-size", "300", "--out", pretrain],
        cwd=tmp_path,
    )
    run_tool(
        [
            "bash", script, *splits, "--mode", "bpe", "--out", finetune,
            "--spm-model", pretrain / "spm.model", "--dict", pretrain,
        ],
        cwd=tmp_path,
    )  # fmt: skip
    for name in ("spm.model", "dict.en.txt", "dict.tr.txt", "test.sp.tr"):
        assert (finetune / name).read_bytes() == (pretrain / name).read_bytes(), name
    report = json.loads((finetune / "prepare_report.json").read_text(encoding="utf-8"))
    assert report["sentencepiece"]["copied_from"] == str(pretrain / "spm.model")
    assert not list(finetune.glob("given.dict.*"))


def test_existing_model_without_its_report_is_refused(tmp_path, capsys):
    raw = tmp_path / "raw"
    raw.mkdir()
    make_corpus(raw)
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    (lonely / "spm.model").write_bytes(b"not read")
    argv = prepare_args(raw, tmp_path / "bin", "bpe") + ["--spm-model", str(lonely / "spm.model")]
    assert prepare.main(argv) == 1
    assert f"{lonely / 'prepare_report.json'}: missing" in capsys.readouterr().err


def test_second_run_reuses_segmentation_and_sentencepiece_and_writes_the_same(tmp_path, capsys):
    """A run that stopped (or is repeated) does not redo finished work: Turkish lines come from
    the segmentation cache in the output directory, and SentencePiece is not trained again when
    its training text and options are unchanged; a changed option trains again."""
    pytest.importorskip("zemberek", reason="zemberek-python is needed for --mode morph")
    raw = tmp_path / "raw"
    raw.mkdir()
    make_corpus(raw)
    out = tmp_path / "bin"
    assert prepare.main(prepare_args(raw, out, "morph")) == 0
    first = {path.name: path.read_bytes() for path in out.glob("*.s[pe]*.*")}
    assert (out / "segmentation_cache.sqlite").is_file()

    capsys.readouterr()
    assert prepare.main(prepare_args(raw, out, "morph")) == 0
    log = capsys.readouterr().err  # main() logs to stderr
    assert "reusing" in log and "training SentencePiece" not in log
    report = json.loads((out / "prepare_report.json").read_text(encoding="utf-8"))
    assert report["segmentation"]["cached_lines"] == report["segmentation"]["lines"]
    assert {path.name: path.read_bytes() for path in out.glob("*.s[pe]*.*")} == first

    assert prepare.main(prepare_args(raw, out, "morph", "--seed", "2")) == 0
    assert "training SentencePiece" in capsys.readouterr().err
