"""The decoding length limit fitted to a data set's training pairs: the smallest max_len_a, in
tenths, with which the given share of targets fits max_len_a × (source + 1) + max_len_b pieces
(fairseq counts the end of sentence)."""

import json

import pytest

from fairseq_struct.morph.length_limit import (
    decoding_length,
    decoding_limit,
    fitted_max_len_a,
)


def piece_files(tmp_path, pairs):
    source, target = tmp_path / "train.sp.en", tmp_path / "train.sp.tr"
    source.write_text("".join("▁a " * s + "\n" for s, _ in pairs), encoding="utf-8")
    target.write_text("".join("▁b " * t + "\n" for _, t in pairs), encoding="utf-8")
    return source, target


# b = 10: a target of 9 pieces needs a = 0 (source of 4 pieces, 5 with the end of sentence),
# one of 20 after a source of 9 exactly a = 1.1 (11 / 10),
# one of 20 after a source of 4 a = 2.2 (11 / 5).
PAIRS = [(4, 9), (9, 20), (4, 20)]


def test_every_pair_fits_at_full_coverage(tmp_path):
    assert fitted_max_len_a(*piece_files(tmp_path, PAIRS), coverage=1.0) == 2.2


def test_the_longest_targets_beyond_the_coverage_are_cut(tmp_path):
    assert fitted_max_len_a(*piece_files(tmp_path, PAIRS), coverage=0.6) == 1.1
    assert fitted_max_len_a(*piece_files(tmp_path, PAIRS), coverage=0.3) == 0.0


def test_the_reports_entry_names_what_fairseq_is_given(tmp_path):
    pairs = [(4, 19)] * 999 + [(4, 60)]  # one outlier in 1,000 is left out at 99.9 %
    assert decoding_length(*piece_files(tmp_path, pairs)) == {
        "max_len_a": 2.0,
        "max_len_b": 10,
        "coverage": 0.999,
    }


def test_no_pairs_is_an_error_naming_the_files(tmp_path):
    source, target = piece_files(tmp_path, [])
    with pytest.raises(ValueError, match=f"{source}, {target}: no sentence pairs"):
        fitted_max_len_a(source, target)


def test_the_limit_to_decode_with_is_the_users_else_the_fitted_else_fairseqs(tmp_path):
    assert decoding_limit(tmp_path, None, None) == (0.0, 200)  # no prepare_report.json
    report = {"target_lang": "tr"}
    (tmp_path / "prepare_report.json").write_text(json.dumps(report))
    assert decoding_limit(tmp_path, None, None) == (0.0, 200)  # prepared before the fit
    report["decoding_length"] = {"max_len_a": 2.4, "max_len_b": 10, "coverage": 0.999}
    (tmp_path / "prepare_report.json").write_text(json.dumps(report))
    assert decoding_limit(tmp_path, None, None) == (2.4, 10)
    # evaluate.sh's rule: either option given replaces the fitted limit, the other at fairseq's.
    assert decoding_limit(tmp_path, None, 50) == (0.0, 50)
    assert decoding_limit(tmp_path, 1.5, None) == (1.5, 200)
