"""The demo's table of masked-token accuracy against the unigram baseline."""

from fairseq_struct.eval.masked_lm_summary import main

RECORD = (
    '2026-11-22 19:16:52 | INFO | valid | {{"valid_loss": "7.0", "valid_mlm_loss": "7.681", '
    '"valid_mlm_accuracy": "{acc}", "valid_unigram_accuracy": "6.41", "valid_bsz": "1199"}}'
)


def test_table_and_exit_status(tmp_path, capsys):
    good, bad = tmp_path / "good.log", tmp_path / "bad.log"
    good.write_text("noise\n" + RECORD.format(acc="3.0") + "\n" + RECORD.format(acc="32.05"))
    bad.write_text(RECORD.format(acc="6.41"))
    assert main(["bert2d=" + str(good), "--json", str(tmp_path / "t.json")]) == 0
    assert "bert2d" in capsys.readouterr().out
    assert '"accuracy_over_baseline": 5.0' in (tmp_path / "t.json").read_text()
    assert main(["bert2d=" + str(good), "elmo=" + str(bad)]) == 1  # no better than baseline
    assert main(["x=" + str(tmp_path / "missing.log")]) == 2
    assert main([str(good)]) == 2  # NAME=LOG expected
