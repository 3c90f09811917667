"""Import published Hugging Face encoders (BERT, BERT2D, XLM-R) as checkpoints of the plugin:
`fairseq-struct import-hf SOURCE OUT_DIR` (`cli`)."""

from typing import Optional, Sequence


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The command (imported when it runs: the package's import stays light)."""
    from fairseq_struct.hf_import.cli import main as run

    return run(argv)
