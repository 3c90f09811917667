"""Turn raw monolingual text into the input of `fairseq-preprocess --only-source` for MLM.

    python -m fairseq_struct.masked_lm.prepare --train raw/train.txt --valid raw/valid.txt \\
        --units pieces --mode morph --lang tr --vocab-size 8000 --out-dir data-bin/tr-mlm/text

Input: one sentence per line, documents separated by empty lines (needed for NSP/SOP; MLM
alone does not care). Output in --out-dir, written atomically:
- `--units pieces` (bert2d, roberta): SentencePiece pieces (`spm.model`, trained on the training
  split, or `--spm-model` reused); in `--mode morph` the text is first segmented into morphemes
  (Turkish: Zemberek, Inuktitut: Morfessor; `fairseq_struct.morph`) and no piece crosses a
  morpheme boundary. A piece starting with ▁ begins a word, which is all the masked-LM task
  needs to find words.
- `--units words` (bert_elmo): Moses-tokenized words (sacremoses), and `dict.txt`: the training
  words by frequency, then the words that only valid/test contain with count 0, so that every
  word keeps its characters (BERT-ELMo embeds words from their characters, never as <unk>).
- {split}.txt per split, empty lines kept; prepare_report.json (lines dropped and why,
  documents, tokens per word).
`scripts/prepare-mlm.sh` runs this and then fairseq-preprocess.
"""

import argparse
import logging
import sys
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from fairseq_struct.cli_logging import configure_logging
from fairseq_struct.morph.corpus_io import (
    CorpusError,
    atomic_write_json,
    atomic_write_lines,
    read_documents,
)
from fairseq_struct.morph.segmenters import (
    DEFAULT_SEGMENTATION_CACHE,
    SEGMENTED_LANGUAGES,
    segment_all,
)
from fairseq_struct.morph.sentencepiece_model import MODEL_TYPES, SentencePieceModel

logger = logging.getLogger("fairseq_struct.masked_lm.prepare")

SPLITS = ("train", "valid", "test")
MODEL_FILE = "spm.model"
WORDS_DICTIONARY_FILE = "dict.txt"
REPORT_FILE = "prepare_report.json"


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", required=True, type=Path, help="raw training text")
    parser.add_argument("--valid", required=True, type=Path, help="raw validation text")
    parser.add_argument("--test", type=Path, help="raw test text (optional)")
    parser.add_argument("--out-dir", required=True, type=Path)
    parser.add_argument("--units", choices=("pieces", "words"), default="pieces")
    parser.add_argument(
        "--mode", choices=("bpe", "morph"), default="bpe", help="pieces: segment morphemes first?"
    )
    parser.add_argument("--lang", default="tr", help="language of the text (tr, iu, ...)")
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--model-type", choices=MODEL_TYPES, default="unigram")
    parser.add_argument("--spm-model", type=Path, help="reuse this SentencePiece model")
    parser.add_argument("--workers", type=int, default=1, help="segmentation processes")
    args = parser.parse_args(argv)
    if args.mode == "morph" and args.lang not in SEGMENTED_LANGUAGES:
        parser.error(f"--mode morph has segmenters for {SEGMENTED_LANGUAGES}, not {args.lang!r}")
    return args


def _segment(documents: Dict[str, List[str]], args: argparse.Namespace) -> Dict[str, List[str]]:
    """Morpheme-segment the non-empty lines of every split (training split first)."""
    order = [split for split in SPLITS if split in documents]
    sentences = [line for split in order for line in documents[split] if line]
    train_lines = sum(1 for line in documents["train"] if line)
    cache = str(args.out_dir / DEFAULT_SEGMENTATION_CACHE) if args.lang == "tr" else None
    segmented = segment_all(
        args.lang, sentences, args.workers, args.out_dir, lambda: sentences[:train_lines], cache
    )
    it = iter(segmented)
    return {split: [next(it) if line else "" for line in documents[split]] for split in order}


def _pieces(documents: Dict[str, List[str]], args: argparse.Namespace) -> Dict[str, List[str]]:
    text = _segment(documents, args) if args.mode == "morph" else documents
    model_path = args.out_dir / MODEL_FILE
    if args.spm_model is not None:
        model = SentencePieceModel(args.spm_model)
        if args.spm_model.resolve() != model_path.resolve():
            model_path.write_bytes(args.spm_model.read_bytes())
    else:
        training = [line for line in text["train"] if line]
        model = SentencePieceModel.train(training, model_path, args.vocab_size, args.model_type)
    return {
        split: [" ".join(model.encode(line)) if line else "" for line in lines]
        for split, lines in text.items()
    }


def _words(documents: Dict[str, List[str]], args: argparse.Namespace) -> Dict[str, List[str]]:
    from sacremoses import MosesTokenizer

    tokenizer = MosesTokenizer(lang=args.lang)
    tokenized = {
        split: [
            tokenizer.tokenize(line, escape=False, return_str=True) if line else ""
            for line in lines
        ]
        for split, lines in documents.items()
    }
    counts = Counter(word for line in tokenized["train"] for word in line.split())
    unseen = sorted(
        {
            word
            for split in tokenized
            if split != "train"
            for line in tokenized[split]
            for word in line.split()
        }
        - counts.keys()
    )
    entries = sorted(counts.items(), key=lambda item: (-item[1], item[0])) + [
        (w, 0) for w in unseen
    ]
    atomic_write_lines(args.out_dir / WORDS_DICTIONARY_FILE, (f"{w} {c}" for w, c in entries))
    return tokenized


def prepare(args: argparse.Namespace) -> Dict[str, object]:
    args.out_dir.mkdir(parents=True, exist_ok=True)
    documents, reports = {}, {}
    for split in SPLITS:
        path = getattr(args, split)
        if path is None:
            continue
        documents[split], report = read_documents(path, split, drop_bad_lines=split == "train")
        reports[split] = asdict(report)
    encoded = _words(documents, args) if args.units == "words" else _pieces(documents, args)
    for split, lines in encoded.items():
        atomic_write_lines(args.out_dir / f"{split}.txt", lines)
        words = sum(len(line.split()) for line in documents[split])
        tokens = sum(len(line.split()) for line in lines)
        reports[split].update(words=words, tokens=tokens, tokens_per_word=round(tokens / words, 4))
    report = {"units": args.units, "mode": args.mode, "lang": args.lang, "splits": reports}
    atomic_write_json(args.out_dir / REPORT_FILE, report)
    return report


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    try:
        report = prepare(args)
    except (CorpusError, OSError) as error:  # OSError: a missing or unreadable input file
        print(f"error: {error}", file=sys.stderr)
        return 1
    for split, figures in report["splits"].items():
        logger.info(
            "%s: %d sentences in %d documents, %d words, %d tokens (%.3f per word), %d lines dropped",
            split,
            figures["sentences_kept"],
            figures["documents"],
            figures["words"],
            figures["tokens"],
            figures["tokens_per_word"],
            sum(figures["dropped_by_reason"].values()),
        )
    return 0


if __name__ == "__main__":
    configure_logging()
    sys.exit(main())
