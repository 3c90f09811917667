"""Kernel launches of a beam-search step, counted on the CPU, by
benchmarks/bench_decoding_launches.py at small widths (the counts do not depend on them): a
`tp_transformer_base` decoder step dispatches at most 1.15 times the kernel-launching operations of
fairseq's `transformer` step. What keeps it there: the attention's concatenated projection weights
kept between steps, and the relative-position terms joined to the keys and values of the single
query (modules/role_attention.py); without either the check fails."""

from conftest import run_benchmark

RATIO_TARGET = 1.15


def test_a_decoder_step_is_within_the_target():
    (line,) = run_benchmark("bench_decoding_launches.py", "--widths", "small")
    a, b = line["a"], line["b"]
    assert (a["arch"], b["arch"]) == ("tp_transformer_base", "transformer")
    assert line["search"]["steps"] + 1 == 9  # 8 tokens and EOS: 9 decoder calls, 8 alike
    for side in (a, b):
        assert side["first_step"] >= side["step"] > 100, side
        assert side["search"] > 9 * side["step"]
    assert line["ratio"] == round(a["step"] / b["step"], 4)
    assert line["ratio"] <= RATIO_TARGET, line
    assert line["meets_target"] is True
