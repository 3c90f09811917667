"""Hypotheses out of the output of stock fairseq-generate, in sentence order, as plain text.

fairseq-generate prints, batch by batch (ids out of order), a block of lines per sentence:

    S-<id>  <source pieces>
    T-<id>  <reference pieces>
    H-<id>  <score>  <hypothesis>                 (one per --nbest, best first)
    D-<id>  <score>  <detokenized hypothesis>
    P-<id>  <positional scores>

The first H- line of each id is read, as pieces or (`--post-process sentencepiece`) as words.
"""

import argparse
import sys
from typing import Dict, Iterable, List, Optional

from fairseq_struct.eval.score import read_sacrebleu_lines
from fairseq_struct.pieces.markers import MORPHEME_BOUNDARY, WORD_START, pieces_to_text

_MAX_IDS_SHOWN = 20


def read_hypotheses(path: str, num_sentences: Optional[int] = None) -> List[str]:
    """The best hypothesis of every sentence in a fairseq-generate log, ordered by sentence id.

    Args:
        path: what fairseq-generate wrote to stdout (or `generate-<subset>.txt`).
        num_sentences: how many sentences the generated subset has; ids 0..num_sentences-1 must
            all be present. Without it, only gaps below the highest id seen are detected.

    Raises:
        ValueError: a malformed H- line, an id outside the subset, or missing sentence ids.
    """
    hypotheses: Dict[int, str] = {}
    with open(path, encoding="utf-8") as log:
        for line_number, line in enumerate(log, start=1):
            # Not D- lines: with `--bpe sentencepiece --post-process sentencepiece` fairseq
            # decodes twice and they lose the spaces between words.
            if not line.startswith("H-"):
                continue
            fields = line.rstrip("\n").split("\t", 2)
            try:
                sentence_id = int(fields[0][2:])
                float(fields[1])
                text = fields[2]
            except (IndexError, ValueError):
                raise ValueError(
                    f"{path}:{line_number}: expected 'H-<id>\\t<score>\\t<hypothesis>', "
                    f"got {line.rstrip()!r}"
                ) from None
            # With --nbest > 1 the best hypothesis comes first.
            hypotheses.setdefault(sentence_id, text)

    if num_sentences is None:
        if not hypotheses:
            raise ValueError(
                f"{path}: no H-<id> lines; is this the output of fairseq-generate, run without "
                "--quiet?"
            )
        num_sentences = max(hypotheses) + 1
    outside = sorted(i for i in hypotheses if not 0 <= i < num_sentences)
    if outside:
        raise ValueError(
            f"{path}: sentence ids {_show_ids(outside)} are outside 0..{num_sentences - 1}; "
            "was this log generated from a different subset than the reference?"
        )
    missing = [i for i in range(num_sentences) if i not in hypotheses]
    if missing:
        raise ValueError(
            f"{path}: no hypothesis for {len(missing)} of {num_sentences} sentences, ids "
            f"{_show_ids(missing)}; fairseq-generate leaves out sentences it skips for size "
            "(--skip-invalid-size-inputs-valid-test, --max-source-positions), the last partial "
            "batch unless --required-batch-size-multiple is 1 (fairseq-fixed 0.12.3.1), and "
            "all after an interruption. Scoring needs every sentence: regenerate them all."
        )
    return [hypotheses[i] for i in range(num_sentences)]


def detokenize(hypotheses: Iterable[str]) -> List[str]:
    """Plain text of H- hypotheses, whether fairseq-generate ran with `--post-process` or not.

    The decision is made once for all lines: `--post-process sentencepiece` removes every
    `▁`, so hypotheses without any are already words separated by spaces. Deciding per line
    would misread a pieces hypothesis that happens to lack a word start.
    """
    hypotheses = list(hypotheses)
    if any(WORD_START in hypothesis for hypothesis in hypotheses):
        return [pieces_to_text(hypothesis) for hypothesis in hypotheses]
    return [hypothesis.replace(MORPHEME_BOUNDARY, "") for hypothesis in hypotheses]


def extract_hypotheses(path: str, num_sentences: Optional[int] = None) -> List[str]:
    """The detokenized best hypotheses of a fairseq-generate log, ordered by sentence id."""
    return detokenize(read_hypotheses(path, num_sentences))


def _show_ids(ids: List[int]) -> str:
    shown = ", ".join(str(i) for i in ids[:_MAX_IDS_SHOWN])
    return shown + (", ..." if len(ids) > _MAX_IDS_SHOWN else "")


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(
        description="Write the hypotheses of a fairseq-generate log as plain text, one per line, "
        "in sentence order.",
    )
    parser.add_argument(
        "generate_log", help="stdout of fairseq-generate (or generate-<subset>.txt)"
    )
    parser.add_argument("--out", required=True, help="where to write the hypotheses")
    expected = parser.add_mutually_exclusive_group()
    expected.add_argument(
        "--num-sentences", type=int, help="number of sentences in the generated subset"
    )
    expected.add_argument(
        "--ref", help="raw reference file: its line count is the number of sentences expected"
    )
    args = parser.parse_args(argv)

    num_sentences = len(read_sacrebleu_lines(args.ref)) if args.ref else args.num_sentences
    try:
        hypotheses = extract_hypotheses(args.generate_log, num_sentences)
    except ValueError as error:
        sys.exit(f"error: {error}")
    with open(args.out, "w", encoding="utf-8") as out:
        out.writelines(hypothesis + "\n" for hypothesis in hypotheses)


if __name__ == "__main__":
    from fairseq_struct.cli_logging import configure_logging

    configure_logging()
    main()
