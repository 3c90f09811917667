"""Import a published Hugging Face encoder (BERTurk, mBERT, XLM-R, the authors' BERT2D) as a
checkpoint of the plugin, with its dictionary and tokenizer.

    fairseq-struct import-hf dbmdz/bert-base-turkish-cased imported/berturk

SOURCE is a model directory (no network is used) or a hub id, fetched once into the Hugging Face
cache. OUT_DIR, written whole or not at all, serves every encoder command of the plugin where a
pretraining run would (docs/finetuning.md):

    model.pt          a masked-LM checkpoint of the plugin (`bert` or `bert2d`; masked_lm_struct)
    dict.txt          the vocabulary as a fairseq dictionary (`hf_import.vocabulary`)
    tokenizer.json    the model's own fast tokenizer, which cuts labelled words
    hf_tokenizer/     its transformers files (for the Hugging Face export)
    hf_import.json    units, special tokens, architecture, what was found and left out
"""

import argparse
import json
import sys
from pathlib import Path
from typing import Optional, Sequence

from fairseq_struct.commands import program_name
from fairseq_struct.hf_import.directory import CHECKPOINT_FILE


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog=program_name("fairseq_struct.hf_import"),
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument("source", help="a Hugging Face model directory, or a hub id")
    parser.add_argument("out_dir", type=Path, help="the directory to write (new or empty)")
    parser.add_argument("--lang", default="tr", help="the language of the model's text (tr)")
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    # torch, transformers and fairseq load with the model, after the arguments.
    from fairseq_struct.hf_import.importer import import_model
    from fairseq_struct.hf_import.source import ImportFailure
    from fairseq_struct.pieces.hf_tokenizer import VocabularyError

    try:
        report = import_model(args.source, args.out_dir, args.lang)
    except (ImportFailure, VocabularyError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(json.dumps({k: v for k, v in report.items() if k != "special_tokens"}, indent=2))
    print(f"imported into {args.out_dir} ({args.out_dir / CHECKPOINT_FILE})")
    return 0
