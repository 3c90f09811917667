"""Paired bootstrap resampling and approximate randomization are sacreBLEU's own, run on BLEU
and chrF against the first system (design.md §5.1)."""

import json
import random
from pathlib import Path

import pytest
from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.significance import PairedTest

from fairseq_struct.eval.score import main
from fairseq_struct.eval.significance import format_report, paired_test, report_to_json

WORDS = "ev okul kitap masa kalem gitti geldi büyük küçük yarın bugün çok güzel su".split()


def make_corpus(size: int = 60):
    rng = random.Random(7)
    lengths = [rng.randint(5, 10) for _ in range(size)]
    references = [" ".join(rng.choice(WORDS) for _ in range(length)) for length in lengths]
    # The baseline drops half of every sentence; the better system misses one word in three.
    baseline = [" ".join(ref.split()[: len(ref.split()) // 2]) for ref in references]
    better = [ref if i % 3 else " ".join(ref.split()[1:]) for i, ref in enumerate(references)]
    return references, baseline, better


def write_lines(path: Path, lines: list) -> str:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("test_type", ["bs", "ar"])
def test_results_equal_sacrebleus_paired_test_called_directly(test_type, monkeypatch):
    monkeypatch.setenv("SACREBLEU_SEED", "4")
    references, baseline, better = make_corpus()
    systems = [("base", baseline), ("better", better), ("same-ish", baseline[:-1] + [better[-1]])]

    report = paired_test(systems, references, test_type, n_samples=200)
    direct = PairedTest(
        systems,
        {"BLEU": BLEU(tokenize="13a", lowercase=False), "chrF": CHRF()},
        references=[references],
        test_type=test_type,
        n_samples=200,
        n_ar_confidence=1000 if test_type == "ar" else -1,
    )
    signatures, columns = direct()

    assert report.signatures == {name: sig.format() for name, sig in signatures.items()}
    assert "seed:4" in report.signatures["BLEU"] and f"{test_type}:200" in report.signatures["BLEU"]
    for index, system in enumerate(report.systems):
        assert system.name == systems[index][0]
        for metric in ("BLEU", "chrF2"):
            expected = columns[metric][index]
            got = system.scores[metric]
            assert (got.score, got.mean, got.ci) == (expected.score, expected.mean, expected.ci)
            assert got.p_value == expected.p_value


def test_a_clearly_better_system_is_significant_under_both_tests():
    references, baseline, better = make_corpus()
    for test_type in ("bs", "ar"):
        report = paired_test([("base", baseline), ("better", better)], references, test_type, 200)
        for score in report.systems[1].scores.values():
            # (0 + 1) / (200 + 1): no resample reaches the observed difference
            assert score.p_value == pytest.approx(1 / 201)
        assert report.systems[1].scores["BLEU"].score > report.systems[0].scores["BLEU"].score


def test_a_system_identical_to_the_baseline_gets_p_one():
    references, baseline, _ = make_corpus()
    report = paired_test([("base", baseline), ("copy", list(baseline))], references, "bs", 200)

    copy = report.systems[1]
    assert copy.identical_to_baseline
    assert {score.p_value for score in copy.scores.values()} == {1.0}
    # sacreBLEU counts only strictly larger differences and would call the copy significant.
    _, columns = PairedTest(
        [("base", baseline), ("copy", baseline)],
        {"BLEU": BLEU()},
        references=[references],
        test_type="bs",
        n_samples=200,
    )()
    assert columns["BLEU"][1].p_value == pytest.approx(1 / 201)


def test_a_system_differing_in_one_sentence_is_not_significant_under_bootstrap():
    references, baseline, better = make_corpus()
    nearly = baseline[:-1] + [better[-1]]
    report = paired_test([("base", baseline), ("nearly", nearly)], references, "bs", 500)
    assert all(score.p_value > 0.2 for score in report.systems[1].scores.values())


def test_approximate_randomization_counts_ties_as_smaller_differences():
    # With one differing sentence every AR trial reproduces the observed difference exactly,
    # and sacreBLEU counts only strictly larger ones: p = 1/(N+1), reported as it is.
    references, baseline, better = make_corpus()
    nearly = baseline[:-1] + [better[-1]]
    report = paired_test([("base", baseline), ("nearly", nearly)], references, "ar", 500)
    assert {score.p_value for score in report.systems[1].scores.values()} == {1 / 501}


def test_mismatched_lengths_and_single_systems_are_rejected():
    references, baseline, better = make_corpus()
    with pytest.raises(ValueError, match="short has 59 hypotheses but there are 60 references"):
        paired_test([("base", baseline), ("short", better[:-1])], references)
    with pytest.raises(ValueError, match="at least one other system"):
        paired_test([("base", baseline)], references)


def test_report_text_reads_like_sacrebleus_table():
    references, baseline, better = make_corpus()
    report = paired_test([("base", baseline), ("better", better)], references, "bs", 200)
    lines = format_report(report)

    assert lines[0] == "paired bootstrap resampling (bs, 200 samples); baseline: base"
    assert lines[1].startswith("BLEU|nrefs:1|bs:200|seed:12345|case:mixed|eff:no|tok:13a")
    assert lines[2].startswith("chrF2|nrefs:1|bs:200|seed:12345|")
    assert lines[3].split("  ")[0] == "system"
    bleu = report.systems[1].scores["BLEU"]
    assert f"{bleu.score:.2f} ({bleu.mean:.2f} ± {bleu.ci:.2f}) (p = 0.0050)*" in lines[5]
    assert "(p = " not in lines[4]


def test_command_line_runs_paired_tests_and_writes_json(tmp_path, capsys):
    references, baseline, better = make_corpus()
    ref = write_lines(tmp_path / "test.raw.tr", references)
    base = write_lines(tmp_path / "base.txt", baseline)
    system = write_lines(tmp_path / "tpt.txt", better)
    out = tmp_path / "paired.json"

    arguments = ["--ref", ref, "--hyp", base, "--hyp", system, "--paired-ar", "--paired-n", "100"]
    main(arguments)
    main(arguments + ["--json", str(out)])

    expected = paired_test([(base, baseline), (system, better)], references, "ar", 100)
    printed = capsys.readouterr().out.splitlines()
    assert printed == format_report(expected) * 2
    record = json.loads(out.read_text(encoding="utf-8"))
    assert record == {"references": ref, "sentences": 60, **report_to_json(expected)}
    assert record["systems"][1]["scores"]["BLEU"]["p_value"] == pytest.approx(1 / 101)
    assert record["systems"][0]["scores"]["chrF2"]["p_value"] is None


def test_command_line_errors_name_the_file_and_the_problem(tmp_path):
    references, baseline, better = make_corpus()
    ref = write_lines(tmp_path / "test.raw.tr", references)
    base = write_lines(tmp_path / "base.txt", baseline)
    short = write_lines(tmp_path / "short.txt", better[:-2])

    with pytest.raises(SystemExit, match=r"short\.txt has 58 lines but .*test\.raw\.tr has 60"):
        main(["--ref", ref, "--hyp", base, "--hyp", short, "--paired-bs"])
    with pytest.raises(SystemExit, match="at least two --hyp files"):
        main(["--ref", ref, "--hyp", base, "--paired-bs"])
    with pytest.raises(SystemExit):
        main(["--ref", ref, "--hyp", base, "--hyp", base])
