"""evaluate.sh's progress: fairseq-generate's output reaches the log unchanged, and each
translated sentence (its S- line) counts once."""

import io

from fairseq_struct.eval.generate_progress import copy_with_progress
from fairseq_struct.progress import StageProgress

OUTPUT = (
    b"S-1\t\xe2\x96\x81I \xe2\x96\x81see\nT-1\tref\nH-1\t-0.2\thyp\nD-1\t-0.2\thyp\n"
    b"P-1\t-0.1 -0.3\nS-0\tx\nH-0\t-0.5\ty\nH-0\t-0.9\tz\n2026-11-26 | INFO | Translated 2\n"
)


def test_the_log_is_the_output_and_sentences_are_counted():
    log = io.BytesIO()
    with StageProgress("fairseq-generate", 2, unit="sentences") as progress:
        assert copy_with_progress(io.BytesIO(OUTPUT), log, progress) == 2
    assert log.getvalue() == OUTPUT
    assert progress.done == 2  # two S- lines; the second sentence's n-best H- lines count once
