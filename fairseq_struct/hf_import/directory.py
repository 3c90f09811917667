"""What an imported model's directory holds, by name, for every command that reads one (here,
where reading it needs neither torch nor fairseq)."""

from pathlib import Path
from typing import Union

CHECKPOINT_FILE = "model.pt"  # the plugin's masked-LM checkpoint
REPORT_FILE = "hf_import.json"  # units, special tokens, architecture, what was left out
HF_TOKENIZER_DIR = "hf_tokenizer"  # the model's own transformers tokenizer, as saved


def imported_checkpoint(path: Union[str, Path]) -> Path:
    """The checkpoint of `path`: the model.pt of an imported model's directory, else `path`."""
    path = Path(path)
    return path / CHECKPOINT_FILE if path.is_dir() else path
