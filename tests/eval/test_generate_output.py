"""Hypotheses are read out of fairseq-generate's output in sentence order and turned back into
plain words (design.md §5.1)."""

from pathlib import Path

import pytest

from fairseq_struct.eval.generate_output import (
    detokenize,
    extract_hypotheses,
    main,
    read_hypotheses,
)

# What stock fairseq-generate prints (logging shares stdout): batches sorted by length, so ids
# out of order; with --nbest 2 for sentence 1; morpheme boundary marks (U+FFED) kept as pieces.
GENERATE_LOG = """\
2026-11-22 16:30:01 | INFO | fairseq_cli.generate | loading model(s) from checkpoint_best.pt
2026-11-22 16:30:02 | INFO | fairseq.tasks.translation | data-bin test en-tr 4 examples
S-2\t\u2581we \u2581saw \u2581it
T-2\t\u2581gör \uffed dü k
H-2\t-0.412\t\u2581gör \uffed dü k
D-2\t-0.412\tgördük
P-2\t-0.5120 -0.3011 -0.4410 -0.3940
S-0\t\u2581from \u2581the \u2581ones \u2581we \u2581could \u2581not \u2581see
T-0\t\u2581gör \uffed eme \uffed dik \uffed ler \uffed imiz \uffed den
H-0\t-0.2051\t\u2581gör \uffed eme \uffed dik \uffed ler \uffed imiz \uffed den
D-0\t-0.2051\tgöremediklerimizden
P-0\t-0.3001 -0.1002 -0.2003 -0.1004 -0.2005 -0.3006 -0.2007 -0.1008 -0.2009 -0.3010 -0.2011
S-3\t\u2581hello
T-3\t\u2581Merhaba .
H-3\t-1.5\t
D-3\t-1.5\t
P-3\t-1.5000
S-1\t\u2581the \u2581house \u2581in \u2581Ankara
T-1\t\u2581Ankara 'daki \u2581ev
H-1\t-0.3125\t\u2581Ankara 'daki \u2581ev
D-1\t-0.3125\tAnkara'daki ev
P-1\t-0.4000 -0.2000 -0.3000 -0.3500
H-1\t-0.9\t\u2581Ankara \u2581ev
D-1\t-0.9\tAnkara ev
P-1\t-1.0000 -0.8000 -0.9000
2026-11-22 16:30:03 | INFO | fairseq_cli.generate | NOTE: hypothesis and token scores are output in base 2
2026-11-22 16:30:03 | INFO | fairseq_cli.generate | Translated 4 sentences (25 tokens) in 0.1s
Generate test with beam=5: BLEU4 = 41.11, 70.0/50.0/40.0/30.0 (BP=1.000, ratio=1.000)
"""

PLAIN_TEXT = ["göremediklerimizden", "Ankara'daki ev", "gördük", ""]


def write_log(tmp_path: Path, text: str) -> str:
    path = tmp_path / "generate-test.log"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_best_hypotheses_come_back_in_sentence_order(tmp_path):
    hypotheses = read_hypotheses(write_log(tmp_path, GENERATE_LOG))

    assert hypotheses == [
        "\u2581gör \uffed eme \uffed dik \uffed ler \uffed imiz \uffed den",
        "\u2581Ankara 'daki \u2581ev",  # the first of the two --nbest hypotheses
        "\u2581gör \uffed dü k",
        "",
    ]


def test_pieces_become_the_original_words(tmp_path):
    assert extract_hypotheses(write_log(tmp_path, GENERATE_LOG), 4) == PLAIN_TEXT


def test_log_of_post_process_sentencepiece_keeps_its_words(tmp_path):
    # --post-process sentencepiece joins the pieces (every ▁ gone) but keeps boundary marks.
    post_processed = [
        "H-1\t-0.3\tAnkara'daki ev",
        "H-0\t-0.2\tgör\uffedeme\uffeddik\uffedler\uffedimiz\uffedden",
        "H-2\t-0.4\tgör\uffeddük",
    ]
    log = write_log(tmp_path, "\n".join(post_processed) + "\n")

    assert extract_hypotheses(log, 3) == PLAIN_TEXT[:3]


def test_one_pieces_line_without_word_start_is_still_read_as_pieces():
    assert detokenize(["\u2581ev ler", "ler den"]) == ["evler", "lerden"]


def test_missing_sentence_ids_are_named_with_the_file(tmp_path):
    log = write_log(tmp_path, GENERATE_LOG)

    with pytest.raises(ValueError, match=r"generate-test\.log: no hypothesis for 2 of 6 .* 4, 5"):
        read_hypotheses(log, 6)


def test_gap_in_sentence_ids_is_found_without_the_sentence_count(tmp_path):
    log = write_log(tmp_path, "H-0\t-0.1\t\u2581a\nH-3\t-0.1\t\u2581b\n")

    with pytest.raises(ValueError, match=r"generate-test\.log: no hypothesis .* ids 1, 2;"):
        read_hypotheses(log)


def test_ids_beyond_the_subset_are_refused(tmp_path):
    log = write_log(tmp_path, GENERATE_LOG)

    with pytest.raises(ValueError, match=r"sentence ids 3 are outside 0\.\.2"):
        read_hypotheses(log, 3)


def test_malformed_hypothesis_line_is_named_by_file_and_line(tmp_path):
    log = write_log(tmp_path, "S-0\t\u2581a\nH-0 -0.1 \u2581a\n")

    with pytest.raises(ValueError, match=r"generate-test\.log:2: expected 'H-<id>"):
        read_hypotheses(log)


def test_log_without_hypotheses_is_refused(tmp_path):
    log = write_log(tmp_path, "2026-11-22 16:30:01 | INFO | fairseq_cli.generate | done\n")

    with pytest.raises(ValueError, match="no H-<id> lines"):
        read_hypotheses(log)


def test_command_line_writes_one_plain_hypothesis_per_reference_line(tmp_path):
    log = write_log(tmp_path, GENERATE_LOG)
    reference = tmp_path / "test.raw.tr"
    reference.write_text("Göremediklerimizden\nAnkara'daki ev\nGördük.\nMerhaba.\n", "utf-8")
    out = tmp_path / "hyp.txt"

    main([log, "--out", str(out), "--ref", str(reference)])

    assert out.read_text(encoding="utf-8") == "".join(line + "\n" for line in PLAIN_TEXT)


def test_command_line_reports_missing_sentences_and_writes_nothing(tmp_path):
    log = write_log(tmp_path, GENERATE_LOG)
    out = tmp_path / "hyp.txt"

    with pytest.raises(SystemExit, match=r"error: .*generate-test\.log: no hypothesis"):
        main([log, "--out", str(out), "--num-sentences", "5"])
    assert not out.exists()
