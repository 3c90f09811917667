"""C_D is H(masked) - H(text), unigram character entropies estimated with the James-Stein
shrinkage estimator of Hausser & Strimmer (2009), in bits (design.md §5.2)."""

import json
import math
import random

import pytest
from conftest import SHARED_DATA

from fairseq_struct.eval.complexity import (
    complexity_cd,
    complexity_of_file,
    james_stein_entropy,
    james_stein_frequencies,
    main,
    mask_word_structure,
    shrinkage_intensity,
)


def test_shrinkage_intensity_and_entropy_match_hand_computation():
    # counts [6, 2, 1, 1]: n = 10, K = 4, theta_ML = [.6, .2, .1, .1]
    # 1 - sum theta^2 = 1 - .42 = .58
    # sum (1/4 - theta)^2 = .1225 + .0025 + .0225 + .0225 = .17
    # lambda = .58 / (9 * .17) = 58/153
    # theta_JS = lambda/4 + (1 - lambda) * theta_ML = [143, 67, 48, 48] / 306
    # H = -sum theta_JS log2 theta_JS = 1.8310938... bits
    assert shrinkage_intensity([6, 2, 1, 1]) == pytest.approx(58 / 153, abs=1e-15)
    assert james_stein_frequencies([6, 2, 1, 1]) == pytest.approx(
        [143 / 306, 67 / 306, 48 / 306, 48 / 306], abs=1e-15
    )
    assert james_stein_entropy([6, 2, 1, 1]) == pytest.approx(1.8310938002442483, abs=1e-12)


def test_counts_4_2_1_1_shrink_exactly_to_the_uniform_target():
    # n = 8, theta_ML = [.5, .25, .125, .125]: 1 - sum theta^2 = .65625,
    # 7 * sum (1/4 - theta)^2 = 7 * .09375 = .65625, so lambda = 1 and H = log2 4 = 2 bits.
    assert shrinkage_intensity([4, 2, 1, 1]) == 1.0
    assert james_stein_entropy([4, 2, 1, 1]) == pytest.approx(2.0, abs=1e-12)


def test_shrinkage_intensity_is_clipped_to_one():
    # [2, 1, 1, 0]: .625 / (3 * .125) = 5/3 before clipping
    assert shrinkage_intensity([2, 1, 1, 0]) == 1.0


def test_all_mass_on_one_category_is_not_shrunk():
    # 1 - sum theta^2 = 0, so lambda = 0 and the entropy stays 0
    assert shrinkage_intensity([5, 0, 0]) == 0.0
    assert james_stein_entropy([5, 0, 0]) == 0.0


@pytest.mark.parametrize("k", [1, 2, 7, 91])
def test_uniform_counts_give_log2_k(k):
    assert james_stein_entropy([3] * k) == pytest.approx(math.log2(k), abs=1e-12)


def test_large_samples_approach_the_maximum_likelihood_entropy():
    counts = [50_000, 25_000, 12_500, 12_500]
    assert james_stein_entropy(counts) == pytest.approx(1.75, abs=1e-4)


@pytest.mark.parametrize("counts", [[], [0, 0], [1, -1]])
def test_invalid_counts_are_rejected(counts):
    with pytest.raises(ValueError):
        james_stein_entropy(counts)


def test_masking_keeps_whitespace_and_draws_from_the_non_whitespace_characters():
    text = "ev evler\nevlerimiz  ev"
    masked = mask_word_structure(text, seed=3)
    assert len(masked) == len(text)
    assert [i for i, c in enumerate(masked) if c.isspace()] == [
        i for i, c in enumerate(text) if c.isspace()
    ]
    assert set(masked) - {" ", "\n"} <= set("evlrimz")


def test_text_without_word_structure_has_c_d_near_zero():
    # Words that are already uniform draws from the alphabet: masking changes nothing.
    rng = random.Random(0)
    words = ["".join(rng.choice("abcdefgh") for _ in range(rng.randint(1, 9))) for _ in range(8000)]
    assert complexity_cd(" ".join(words)) == pytest.approx(0.0, abs=0.01)


def test_structured_words_have_positive_c_d():
    # Unigram C_D sees structure as a skewed character distribution inside words.
    text = " ".join(["göremediklerimizden biri geldi ."] * 2000)
    assert complexity_cd(text) == pytest.approx(0.274, abs=0.01)
    # One letter fills the words of a 16-letter alphabet: masking adds almost 4 bits.
    assert complexity_cd(" ".join(["eeeeeeee"] * 1000) + " abcdfghijklmnop") > 3.0


def test_c_d_is_deterministic_for_a_seed_and_varies_across_seeds():
    text = " ".join(["evlerimizden biri geldi"] * 200)
    assert complexity_cd(text, seed=5) == complexity_cd(text, seed=5)
    assert complexity_cd(text, seed=5) != complexity_cd(text, seed=6)


def test_only_the_first_max_chars_characters_count():
    head = " ".join(["evlerimizden biri geldi"] * 50)
    assert complexity_cd(head + "xyzw qqq" * 100, max_chars=len(head)) == complexity_cd(head)


def test_whitespace_only_text_is_rejected_with_the_file_name(tmp_path):
    path = tmp_path / "blank.tr"
    path.write_text(" \n\n", encoding="utf-8")
    with pytest.raises(ValueError, match="blank.tr"):
        complexity_of_file(str(path))


TATOEBA_TR = SHARED_DATA / "en-tr-tatoeba" / "tatoeba.tr"


@pytest.mark.skipif(not TATOEBA_TR.exists(), reason="shared Tatoeba data not present")
def test_turkish_c_d_lies_in_the_papers_range():
    # Soulos et al. report C_D 1.45-1.49 on their Turkish test sets.
    assert 1.45 <= complexity_of_file(str(TATOEBA_TR))["c_d_bits"] <= 1.49


def test_command_line_prints_one_line_per_file_and_json(tmp_path, capsys):
    first = tmp_path / "a.txt"
    second = tmp_path / "b.txt"
    first.write_text("evlerimizden biri geldi\n" * 20, encoding="utf-8")
    second.write_text("ab ba ab\n" * 20, encoding="utf-8")
    out_json = tmp_path / "cd.json"

    main([str(first), str(second), "--seed", "4", "--json", str(out_json)])

    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"{first}\tC_D = ")
    assert lines[1].startswith(f"{second}\tC_D = ")
    printed = json.loads(lines[2])
    assert printed == json.loads(out_json.read_text(encoding="utf-8"))
    assert [record["file"] for record in printed] == [str(first), str(second)]
    assert printed[0]["c_d_bits"] == complexity_cd(first.read_text(encoding="utf-8"), seed=4)
    assert printed[0]["seed"] == 4
