"""The README's demo command, shrunk: every stage of scripts/demo.sh runs on a small corpus, and
the run ends with sacreBLEU scores and signatures of a model that learnt to translate: BLEU >= 50
on the 500 test sentences (the full demo, 20,000 pairs and 800 updates, reaches 99; 1,500 pairs,
200 validation pairs and 600 updates of 512 tokens give 59.7 here), one hypothesis per reference
line, and scores that sacreBLEU gives again for the written hypotheses. The run is the session's shared demo model
(conftest's `demo_translation_run`)."""

import json
import re

import pytest
import sacrebleu

TEST_SENTENCES = 500  # scripts/demo.sh: --test 500


def test_demo_script_runs_every_stage_and_prints_signed_scores(demo_translation_run):
    output = (demo_translation_run / "output.txt").read_text(encoding="utf-8")
    work = demo_translation_run / "work"
    assert "Zemberek recognises 100.00%" in output
    assert "BLEU" in output and "tok:13a" in output and "chrF2" in output
    # evaluate.sh's progress (a log line here, where standard error is not a terminal).
    assert re.search(r"fairseq-generate: 500/500 sentences, [0-9,]+ sentences/s", output)
    evaluation = work / "eval-morph"
    report = json.loads((evaluation / "scores.json").read_text())
    hypotheses = (evaluation / "hyp.txt").read_text(encoding="utf-8").split("\n")
    references = (work / "raw" / "test.tr").read_text(encoding="utf-8").split("\n")
    assert hypotheses[-1] == references[-1] == ""  # one sentence a line, each line ended
    hypotheses, references = hypotheses[:-1], references[:-1]
    assert len(hypotheses) == len(references) == report["sentences"] == TEST_SENTENCES
    scores = report["scores"]
    assert set(scores) == {"BLEU", "chrF", "chrF++"}
    assert scores["BLEU"]["score"] >= 50, scores["BLEU"]["text"]
    assert scores["BLEU"]["text"] in output  # the printed line is the saved one
    assert scores["BLEU"]["signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a")
    # The saved scores are sacreBLEU's for the written hypotheses against the raw references.
    bleu = sacrebleu.corpus_bleu(hypotheses, [references])
    chrf = sacrebleu.corpus_chrf(hypotheses, [references])
    chrf_pp = sacrebleu.corpus_chrf(hypotheses, [references], word_order=2)
    assert scores["BLEU"]["score"] == pytest.approx(bleu.score, abs=1e-9)
    assert scores["chrF"]["score"] == pytest.approx(chrf.score, abs=1e-9)
    assert scores["chrF++"]["score"] == pytest.approx(chrf_pp.score, abs=1e-9)
