"""InuktitutSegmenter: Morfessor Baseline morphs cut from the original characters (design.md §3)."""

import json
import logging
import random

import pytest
from conftest import REPO_ROOT, SHARED_DATA, run_tool
from test_prepare import restore_logging  # noqa: F401 (autouse: resets logging)
from test_prepare import binarize, prepare_args

from fairseq_struct.morph import prepare
from fairseq_struct.morph.inuktitut import InuktitutSegmenter
from fairseq_struct.morph.segmenters import INUKTITUT_MODEL_FILE
from fairseq_struct.pieces.markers import MORPHEME_BOUNDARY as B
from fairseq_struct.pieces.markers import pieces_to_text

# Real Inuktitut (syllabics, from the WMT20 news task) with its English side. It is shared
# development data, not part of the repository, so the tests that read it skip when it is absent.
WMT_SAMPLE = SHARED_DATA / "en-iu-wmt20-sample"

# Romanized Inuktitut-like words: every stem with every suffix, so that Morfessor has every
# reason to store stems and suffixes once instead of 48 whole words.
STEMS = ["illu", "nuna", "qimmiq", "umiaq", "tupiq", "angut"]
SUFFIXES = ["mik", "mut", "tut", "lu", "nit", "kkut", "tigut", "vik"]
ROMANIZED = [" ".join(stem + suffix for suffix in SUFFIXES) for stem in STEMS] + [" ".join(STEMS)]


@pytest.fixture(scope="module")
def romanized():
    segmenter = InuktitutSegmenter()
    segmenter.train(ROMANIZED)
    return segmenter


@pytest.fixture(scope="module")
def sample_lines():
    path = WMT_SAMPLE / "sample.iu"
    if not path.exists():
        pytest.skip(f"shared WMT20 sample not found at {path}")
    return path.read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="module")
def sample_segmenter(sample_lines):
    # Trained on the first 200 lines (about 2 s; all 1,000 take about 30 s), as prepare trains
    # on the training split and then segments unseen valid and test lines too.
    segmenter = InuktitutSegmenter()
    segmenter.train(sample_lines[:200])
    return segmenter


def morphs(segmented: str) -> list:
    return [word.split(B) for word in segmented.split(" ")]


def test_word_seen_with_frequent_suffixes_is_split_at_them(romanized):
    assert romanized.segment("illumut nunamik qimmiqtut umiaqlu") == (
        f"illu{B}mut nuna{B}mik qimmiq{B}tut umiaq{B}lu"
    )


def test_unseen_combination_of_known_morphs_is_split_too(romanized):
    assert romanized.segment("illumiklu") == f"illu{B}mik{B}lu"


def test_original_case_survives_while_the_model_sees_lower_case(romanized):
    assert morphs(romanized.segment("Illumut NUNAMIK Qimmiqtut")) == [
        ["Illu", "mut"],
        ["NUNA", "MIK"],
        ["Qimmiq", "tut"],
    ]


def test_punctuation_and_digits_stay_whole_and_outside_the_model(romanized):
    assert romanized.segment('"Illumut," (nunamik).') == f'"Illu{B}mut," (nuna{B}mik).'
    # a number takes case suffixes: it is cut off its suffix but never split itself
    assert romanized.segment("2018mut 603mik.") == f"2018{B}mut 603{B}mik."
    for word in ("1,234.5", "(867)", "975-5000", "--", "!?"):
        assert romanized.segment(word) == word


def test_whitespace_is_kept_exactly(romanized):
    assert romanized.segment("  illumut   nunamik ") == f"  illu{B}mut   nuna{B}mik "
    assert romanized.segment("") == ""


def test_every_line_of_the_wmt_sample_comes_back_when_the_marks_are_removed(
    sample_segmenter, sample_lines
):
    segmented = [sample_segmenter.segment(line) for line in sample_lines]
    assert [line.replace(B, "") for line in segmented] == sample_lines
    words = [word for line in segmented for word in line.split()]
    split = sum(B in word for word in words)
    assert 0.2 < split / len(words) < 0.9, "syllabic words are split, but not all of them"


def test_saved_and_loaded_model_segments_identically(tmp_path, sample_segmenter, sample_lines):
    path = tmp_path / "morfessor.iu.segm"
    sample_segmenter.save(path)
    text = path.read_text(encoding="utf-8")  # a text file: loading it unpickles nothing
    assert json.loads(text.splitlines()[0].split(" ", 3)[3]) == {
        "corpus_weight": 1.0,
        "dampening": "log",
        "lowercase": True,
    }
    loaded = InuktitutSegmenter.load(path)
    assert [loaded.segment(line) for line in sample_lines] == [
        sample_segmenter.segment(line) for line in sample_lines
    ]


def test_retraining_on_the_same_lines_gives_the_same_model(tmp_path, sample_lines):
    outside = random.getstate()
    for name in ("first", "second"):
        segmenter = InuktitutSegmenter()
        segmenter.train(sample_lines[:100])
        segmenter.save(tmp_path / name)
    assert (tmp_path / "first").read_bytes() == (tmp_path / "second").read_bytes()
    assert random.getstate() == outside, "training must not move the caller's random state"


def test_reserved_boundary_mark_is_refused(romanized):
    with pytest.raises(ValueError, match=r"morpheme boundary mark .* \(U\+FFED\) at character 5"):
        romanized.segment(f"illu{B}mut")
    with pytest.raises(ValueError, match="training line 2 already contains"):
        InuktitutSegmenter().train(["illumut", f"nuna{B}mik"])


def test_load_refuses_a_file_that_is_not_a_saved_model(tmp_path):
    path = tmp_path / "other.segm"
    path.write_text("1 illu + mut\n", encoding="utf-8")
    with pytest.raises(ValueError, match=f"{path}:1: expected an InuktitutSegmenter model"):
        InuktitutSegmenter.load(path)


def test_segmenting_before_training_is_an_error():
    with pytest.raises(RuntimeError, match="call train"):
        InuktitutSegmenter().segment("illumut")


# Lines of the WMT sample in each split of the small parallel corpus the prepare tests build.
RANGES = {"train": (0, 200), "valid": (200, 250), "test": (250, 300)}


def write_corpus(raw, sample_lines):
    english = (WMT_SAMPLE / "sample.en").read_text(encoding="utf-8").splitlines()
    raw.mkdir()
    for split, (start, end) in RANGES.items():
        for lang, lines in (("en", english), ("iu", sample_lines)):
            text = "".join(line + "\n" for line in lines[start:end])
            (raw / f"{split}.{lang}").write_text(text, encoding="utf-8")


def test_prepare_morph_mode_learns_on_train_saves_the_model_and_reuses_it(tmp_path, sample_lines):
    raw = tmp_path / "raw"
    write_corpus(raw, sample_lines)
    out = tmp_path / "bin"
    args = prepare_args(raw, out, "morph", "--tgt-lang", "iu", "--vocab-size", "600")

    assert prepare.main(args) == 0

    model = out / INUKTITUT_MODEL_FILE
    trained_on_train = InuktitutSegmenter()
    trained_on_train.train(sample_lines[:200])
    trained_on_train.save(tmp_path / "expected.segm")
    assert model.read_bytes() == (tmp_path / "expected.segm").read_bytes()
    for split, (start, end) in RANGES.items():
        encoded = (out / f"{split}.sp.iu").read_text(encoding="utf-8").splitlines()
        assert [pieces_to_text(line) for line in encoded] == sample_lines[start:end]
    report = json.loads((out / "prepare_report.json").read_text(encoding="utf-8"))
    assert report["segmentation"]["lines"] == 300
    assert report["segmentation"]["model_reused"] is False
    assert 1 < report["segmentation"]["morphemes_per_word"] < 3

    first_pieces = (out / "train.sp.iu").read_bytes()
    assert prepare.main(args) == 0
    report = json.loads((out / "prepare_report.json").read_text(encoding="utf-8"))
    assert report["segmentation"]["model_reused"] is True
    assert (out / "train.sp.iu").read_bytes() == first_pieces
    binarize(out, "iu", tmp_path)


def test_prepare_segments_inuktitut_alike_in_two_worker_processes(tmp_path, sample_lines):
    """Inuktitut lines are segmented and encoded in --workers processes, chunk by chunk, in
    order: the same bytes as one process reading the whole corpus as one chunk."""
    raw = tmp_path / "raw"
    write_corpus(raw, sample_lines)
    outputs = []
    for workers, chunk_lines in ((1, 1000), (2, 150)):  # 150: two batches, one per process
        out = tmp_path / f"bin-{workers}"
        args = prepare_args(raw, out, "morph", "--tgt-lang", "iu", "--vocab-size", "600")
        extra = ["--workers", str(workers), "--chunk-lines", str(chunk_lines), "--spm-threads", "1"]
        assert prepare.main([*args, *extra]) == 0
        report = json.loads((out / "prepare_report.json").read_text(encoding="utf-8"))
        assert report["segmentation"]["workers"] == workers
        names = [f"{split}.{kind}.{lang}" for split in RANGES for kind, lang in
                 (("seg", "iu"), ("sp", "iu"), ("sp", "en"))]  # fmt: skip
        outputs.append({name: (out / name).read_bytes() for name in names})
    assert outputs[0] == outputs[1]


def test_script_runs_prepare_and_fairseq_preprocess_for_inuktitut(tmp_path, sample_lines):
    raw = tmp_path / "raw"
    write_corpus(raw, sample_lines)
    out = tmp_path / "data-bin"
    script = REPO_ROOT / "scripts" / "prepare-en-iu.sh"
    run_tool(
        [
            "bash", script, "--train", raw / "train", "--valid", raw / "valid",
            "--test", raw / "test", "--vocab-size", "600", "--out", out,
        ],
        cwd=tmp_path,
    )  # fmt: skip
    for name in ("morfessor.iu.segm", "spm.model", "dict.iu.txt", "test.en-iu.iu.bin"):
        assert (out / name).exists(), name


def test_training_reports_progress_per_epoch_and_restores_morfessors_hook(caplog):
    import morfessor

    caplog.set_level(logging.INFO, logger="fairseq_struct.progress")
    stock_hook = morfessor.baseline._progress
    InuktitutSegmenter().train(ROMANIZED)
    word_types = len(set(" ".join(ROMANIZED).split()))
    epochs = [m for m in caplog.messages if m.startswith("Morfessor training, epoch ")]
    assert epochs and epochs[0].startswith(
        f"Morfessor training, epoch 1: {word_types}/{word_types} word types, "
    )
    assert morfessor.baseline._progress is stock_hook
