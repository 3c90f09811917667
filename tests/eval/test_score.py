"""Scores are sacreBLEU's own BLEU (13a, cased), chrF and chrF++ against the raw reference, each
with its signature (design.md §5.1)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import sacrebleu

from fairseq_struct.eval.score import corpus_scores, main, read_sacrebleu_lines, score_files

REFERENCES = [
    "Göremediklerimizden biri bugün geldi.",
    "Ankara'daki evimiz çok büyük.",
    "Kitapları masanın üstüne bıraktım.",
    "İstanbul'a yarın gideceğiz.",
]
HYPOTHESES = [
    "Göremediklerimizden biri bugün geldi.",
    "Ankara'daki ev çok büyük .",
    "kitapları masaya bıraktım.",
    "istanbul'a yarın gidiyoruz.",
]


def write_lines(path: Path, lines: list) -> str:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def test_scores_equal_sacrebleu_called_directly():
    scores = corpus_scores(HYPOTHESES, REFERENCES)

    assert scores["BLEU"].score == sacrebleu.corpus_bleu(HYPOTHESES, [REFERENCES]).score
    assert scores["chrF"].score == sacrebleu.corpus_chrf(HYPOTHESES, [REFERENCES]).score
    chrf_plus_plus = sacrebleu.corpus_chrf(HYPOTHESES, [REFERENCES], word_order=2)
    assert scores["chrF++"].score == chrf_plus_plus.score


def test_every_score_carries_its_signature():
    scores = corpus_scores(HYPOTHESES, REFERENCES)

    assert "tok:13a" in scores["BLEU"].signature and "case:mixed" in scores["BLEU"].signature
    assert "nw:0" in scores["chrF"].signature
    assert "nw:2" in scores["chrF++"].signature
    for score in scores.values():
        assert f"version:{sacrebleu.__version__}" in score.signature
        assert score.text.startswith(f"{score.name}|{score.signature} = ")


def test_bleu_is_cased():
    lowercased = [reference.lower() for reference in REFERENCES]

    assert corpus_scores(REFERENCES, REFERENCES)["BLEU"].score == pytest.approx(100.0)
    assert corpus_scores(lowercased, REFERENCES)["BLEU"].score < 100.0


def test_files_score_like_the_sacrebleu_command_line(tmp_path):
    # A carriage return inside a line and trailing blanks: read as sacrebleu's CLI reads them.
    references = REFERENCES[:3] + ["İstanbul'a\r yarın gideceğiz.  "]
    hyp = write_lines(tmp_path / "hyp.txt", HYPOTHESES)
    ref = write_lines(tmp_path / "ref.txt", references)

    scores = score_files(hyp, ref)
    command_line = subprocess.run(
        [sys.executable, "-m", "sacrebleu", ref, "-i", hyp, "-m", "bleu", "chrf"]
        + ["-f", "json", "-w", "6"],
        capture_output=True,
        text=True,
        check=True,
    )
    reported = {score["name"]: score["score"] for score in json.loads(command_line.stdout)}

    assert len(read_sacrebleu_lines(ref)) == 4
    assert round(scores["BLEU"].score, 6) == reported["BLEU"]
    assert round(scores["chrF"].score, 6) == reported["chrF2"]


def test_line_count_mismatch_names_both_files(tmp_path):
    hyp = write_lines(tmp_path / "hyp.txt", HYPOTHESES[:3])
    ref = write_lines(tmp_path / "test.raw.tr", REFERENCES)

    with pytest.raises(ValueError, match=r"hyp\.txt has 3 lines but .*test\.raw\.tr has 4"):
        score_files(hyp, ref)
    with pytest.raises(SystemExit, match=r"error: .*hyp\.txt has 3 lines"):
        main(["--hyp", hyp, "--ref", ref])


def test_command_line_prints_scores_with_signatures_and_writes_json(tmp_path, capsys):
    hyp = write_lines(tmp_path / "hyp.txt", HYPOTHESES)
    ref = write_lines(tmp_path / "test.raw.tr", REFERENCES)
    out = tmp_path / "scores.json"

    main(["--hyp", hyp, "--ref", ref, "--json", str(out)])

    expected = corpus_scores(HYPOTHESES, REFERENCES)
    printed = capsys.readouterr().out.splitlines()
    assert printed == [score.text for score in expected.values()]
    record = json.loads(out.read_text(encoding="utf-8"))
    assert record["hypotheses"] == hyp and record["references"] == ref
    assert record["sentences"] == 4
    assert list(record["scores"]) == ["BLEU", "chrF", "chrF++"]
    for key, score in expected.items():
        assert record["scores"][key] == {
            "name": score.name,
            "score": score.score,
            "signature": score.signature,
            "text": score.text,
        }
