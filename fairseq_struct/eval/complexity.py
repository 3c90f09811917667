"""The C_D morphological complexity of a text: relative entropy of word structure (design.md §5.2).

C_D = H(masked) − H(text), unigram character entropies in bits (James-Stein shrinkage, Hausser &
Strimmer 2009) over the text's alphabet; the masked copy replaces every non-whitespace character
(`str.isspace`: line breaks are whitespace) by a uniform draw from the text's non-whitespace
characters. A character is a code point, of the first `max_chars` read.
"""

import argparse
import json
import math
import random
import sys
from collections import Counter
from typing import Dict, List, Optional, Sequence

from fairseq_struct.corpus_io import atomic_write_json

DEFAULT_MAX_CHARS = 100_000
DEFAULT_SEED = 1


def shrinkage_intensity(counts: Sequence[int]) -> float:
    """The James-Stein shrinkage intensity towards the uniform target 1/K, clipped to [0, 1].

    eq. 8 of Hausser & Strimmer (2009): lambda* = (1 - sum theta_ML^2) /
    ((n - 1) * sum (1/K - theta_ML)^2). The R package `entropy` computes the same quantity as
    sum(theta_ML * (1 - theta_ML) / (n - 1)) / sum((1/K - theta_ML)^2).

    Raises:
        ValueError: no categories, a negative count, or a total count of zero.
    """
    n = _total(counts)
    if n == 1:
        # One observation carries no variance estimate (n - 1 = 0): trust the target.
        return 1.0
    k = len(counts)
    theta_ml = [count / n for count in counts]
    misspecification = sum((1 / k - theta) ** 2 for theta in theta_ml)
    if misspecification == 0:
        # The ML estimate is already the target; every lambda gives the same estimate.
        return 1.0
    variance = 1 - sum(theta**2 for theta in theta_ml)
    return min(1.0, max(0.0, variance / ((n - 1) * misspecification)))


def james_stein_frequencies(counts: Sequence[int]) -> List[float]:
    """Cell frequencies shrunk towards 1/K: lambda / K + (1 - lambda) * theta_ML (eq. 5)."""
    n = _total(counts)
    lam = shrinkage_intensity(counts)
    k = len(counts)
    return [lam / k + (1 - lam) * count / n for count in counts]


def james_stein_entropy(counts: Sequence[int]) -> float:
    """Shannon entropy in bits (log base 2) of the James-Stein shrinkage frequencies.

    `counts` holds one count per category of the alphabet, zeros included: K = len(counts).
    """
    return -sum(theta * math.log2(theta) for theta in james_stein_frequencies(counts) if theta > 0)


def _total(counts: Sequence[int]) -> int:
    if len(counts) == 0:
        raise ValueError("james-stein entropy needs at least one category")
    if any(count < 0 for count in counts):
        raise ValueError(f"counts must be non-negative, got {list(counts)}")
    total = sum(counts)
    if total == 0:
        raise ValueError("james-stein entropy needs at least one observation, all counts are 0")
    return total


def mask_word_structure(text: str, seed: int = DEFAULT_SEED) -> str:
    """The text with every non-whitespace character replaced by a uniform draw from its
    non-whitespace characters; whitespace stays in place."""
    alphabet = sorted({char for char in text if not char.isspace()})
    rng = random.Random(seed)
    return "".join(char if char.isspace() else rng.choice(alphabet) for char in text)


def complexity_cd(text: str, max_chars: int = DEFAULT_MAX_CHARS, seed: int = DEFAULT_SEED) -> float:
    """C_D = H(masked) - H(text) in bits, over the first `max_chars` characters of the text.

    Raises:
        ValueError: the text has no non-whitespace character in its first `max_chars`.
    """
    text = text[:max_chars]
    if not any(not char.isspace() for char in text):
        raise ValueError("C_D needs text with at least one non-whitespace character")
    masked = mask_word_structure(text, seed)
    alphabet = sorted(set(text))
    text_counts = Counter(text)
    masked_counts = Counter(masked)
    original_entropy = james_stein_entropy([text_counts[char] for char in alphabet])
    masked_entropy = james_stein_entropy([masked_counts[char] for char in alphabet])
    return masked_entropy - original_entropy


def complexity_of_file(
    path: str, max_chars: int = DEFAULT_MAX_CHARS, seed: int = DEFAULT_SEED
) -> Dict[str, object]:
    """C_D of a UTF-8 text file with what it was computed from, ready for JSON.

    Raises:
        ValueError: the file is not UTF-8 or has no non-whitespace character (names the file).
    """
    try:
        with open(path, encoding="utf-8", newline="") as source:
            text = source.read(max_chars)
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not UTF-8 text ({error})") from error
    try:
        value = complexity_cd(text, max_chars=max_chars, seed=seed)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from error
    return {
        "file": path,
        "c_d_bits": value,
        "characters": len(text),
        "alphabet_size": len(set(text)),
        "max_chars": max_chars,
        "seed": seed,
    }


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(
        description="C_D morphological complexity (relative entropy of word structure, "
        "Bentz et al. 2016, with James-Stein unigram character entropies in bits) of text files.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="UTF-8 text files")
    parser.add_argument(
        "--max-chars",
        type=int,
        default=DEFAULT_MAX_CHARS,
        help="use only the first this many characters of each file (default: %(default)s)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=DEFAULT_SEED,
        help="seed of the random draws that mask word structure (default: %(default)s)",
    )
    parser.add_argument("--json", help="also write the results to this JSON file")
    args = parser.parse_args(argv)

    try:
        results = [complexity_of_file(path, args.max_chars, args.seed) for path in args.files]
    except (OSError, ValueError) as error:
        sys.exit(f"error: {error}")
    for result in results:
        print(
            f"{result['file']}\tC_D = {result['c_d_bits']:.4f} bits "
            f"({result['characters']} characters, alphabet {result['alphabet_size']})"
        )
    print(json.dumps(results, ensure_ascii=False))
    if args.json:
        atomic_write_json(args.json, results)


if __name__ == "__main__":
    from fairseq_struct.cli_logging import configure_logging

    configure_logging()
    main()
