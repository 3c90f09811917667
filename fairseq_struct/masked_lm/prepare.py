"""Turn raw monolingual text into the input of `fairseq-preprocess --only-source` for MLM.

    fairseq-struct prepare-mlm --train raw/train.txt --valid raw/valid.txt \\
        --units pieces --mode morph --lang tr --vocab-size 8000 --out-dir data-bin/tr-mlm/text

Input: one sentence a line, documents separated by empty lines. The units (`--units pieces`,
`wordpiece` or `words`) and the models they are for: docs/pretraining.md. Written atomically into
--out-dir: {split}.txt (document breaks kept), spm.model (pieces), tokenizer.json and vocab.txt
(wordpiece), dict.txt (words, wordpiece) and prepare_report.json; streamed in chunks and resumed
after a kill, as `morph.prepare`.
"""

import argparse
import hashlib
import logging
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from functools import lru_cache, partial
from importlib.metadata import version
from itertools import islice
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple

from fairseq_struct.cli_logging import configure_logging
from fairseq_struct.corpus_io import (
    CorpusError,
    DocumentsReport,
    atomic_write_bytes,
    atomic_write_json,
    atomic_write_lines,
    count_lines,
    iter_documents,
)
from fairseq_struct.morph import chunk_encoding
from fairseq_struct.morph.chunk_store import (
    ChunkResult,
    ChunkStats,
    ChunkStore,
    process_chunk,
    read_chunk,
    run_chunk_stage,
)
from fairseq_struct.morph.pipeline_options import (
    add_pipeline_options,
    check_pipeline_options,
    train_sentencepiece,
)
from fairseq_struct.morph.prepare import (
    MODEL_FILE,
    REPORT_FILE,
    SPLITS,
    WORK_DIR,
    segment_chunks,
)
from fairseq_struct.morph.segmenters import (
    CACHING_SEGMENTERS,
    DEFAULT_SEGMENTATION_CACHE,
    SEGMENTED_LANGUAGES,
    open_segmenter,
)
from fairseq_struct.morph.sentencepiece_model import MODEL_TYPES, SentencePieceModel
from fairseq_struct.pieces.hf_tokenizer import (
    BERT_VOCABULARY_FILE,
    TOKENIZER_FILE,
    TokenizerUnits,
    map_vocabulary,
)
from fairseq_struct.progress import StageProgress

logger = logging.getLogger("fairseq_struct.masked_lm.prepare")

WORDS_DICTIONARY_FILE = "dict.txt"
TOKENIZE_STAGE = "tokenize"
WORDPIECE_STAGE = "wordpiece"
# BERT's special tokens, by the attribute names transformers gives them.
WORDPIECE_SPECIALS = {
    "pad_token": "[PAD]",
    "unk_token": "[UNK]",
    "cls_token": "[CLS]",
    "sep_token": "[SEP]",
    "mask_token": "[MASK]",
}
# Languages whose uncased WordPiece vocabulary keeps accents (--lowercase): stripping German's
# umlauts merges words (schön/schon, möchten/mochten, zählen/zahlen), so German uncased
# encoders that keep them (German-NLP-Group's ELECTRA) do; BERT's uncased vocabularies strip.
ACCENTED_LANGUAGES = ("de",)


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", required=True, type=Path, help="raw training text")
    parser.add_argument("--valid", required=True, type=Path, help="raw validation text")
    parser.add_argument("--test", type=Path, help="raw test text (optional)")
    parser.add_argument("--out-dir", required=True, type=Path)
    parser.add_argument("--units", choices=("pieces", "words", "wordpiece"), default="pieces")
    parser.add_argument(
        "--lowercase",
        action="store_true",
        help="wordpiece: an uncased vocabulary (lowercased; accents stripped as BERT's uncased "
        "vocabularies do, except for German: see --keep-accents)",
    )
    accents = parser.add_mutually_exclusive_group()
    accents.add_argument(
        "--keep-accents",
        dest="strip_accents",
        action="store_false",
        default=None,
        help="wordpiece --lowercase: keep accents and umlauts (default for --lang "
        f"{' and '.join(ACCENTED_LANGUAGES)}: stripping them merges words, schön and schon)",
    )
    accents.add_argument(
        "--strip-accents",
        dest="strip_accents",
        action="store_true",
        help="wordpiece --lowercase: strip accents, umlauts too (BERT's uncased vocabularies; "
        "the default for every other language)",
    )
    parser.add_argument(
        "--mode", choices=("bpe", "morph"), default="bpe", help="pieces: segment morphemes first?"
    )
    parser.add_argument(
        "--lang",
        default="tr",
        help="language of the text: tr (Zemberek) or iu (Morfessor) for --mode morph; any "
        "language (de, ...) for bpe pieces, wordpiece and words (Moses' rules for it)",
    )
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--model-type", choices=MODEL_TYPES, default="unigram")
    parser.add_argument("--spm-model", type=Path, help="reuse this SentencePiece model")
    add_pipeline_options(
        parser, "segmentation, encoding and its round-trip check, and Moses tokenization"
    )
    args = parser.parse_args(argv)
    check_pipeline_options(parser, args)
    if args.mode == "morph" and args.units == "wordpiece":
        parser.error("--mode morph segments for SentencePiece pieces; wordpiece takes none")
    if args.mode == "morph" and args.lang not in SEGMENTED_LANGUAGES:
        parser.error(
            f"--mode morph has morphological segmenters for {' and '.join(SEGMENTED_LANGUAGES)} "
            f"only, none for {args.lang!r}: use --mode bpe (SentencePiece pieces, the default), "
            "--units wordpiece or --units words"
        )
    if args.strip_accents is not None and not (args.units == "wordpiece" and args.lowercase):
        parser.error("--keep-accents and --strip-accents go with --units wordpiece --lowercase")
    if args.strip_accents is None:  # what an uncased vocabulary of the language does
        args.strip_accents = args.lowercase and args.lang not in ACCENTED_LANGUAGES
    return args


@dataclass
class _Split:
    """One split as read: its report, its checked and normalised chunks, and its words."""

    report: DocumentsReport
    chunks: List[Path] = field(default_factory=list)
    words: int = 0  # whitespace words of the normalised lines (tokens_per_word's denominator)

    @property
    def lines(self) -> int:
        """Lines of the chunks: the sentences and one break between documents."""
        return self.report.sentences_kept + self.report.documents - 1


def prepare(args: argparse.Namespace) -> Dict[str, object]:
    """Run all stages; returns the report that is also written to prepare_report.json."""
    args.out_dir.mkdir(parents=True, exist_ok=True)
    store = ChunkStore(args.out_dir / WORK_DIR)
    stage_seconds: Dict[str, float] = {}
    paths = {split: getattr(args, split) for split in SPLITS if getattr(args, split) is not None}
    with StageProgress("read and check", sum(map(count_lines, paths.values()))) as progress:
        splits = {
            split: _read_split(split, path, args, store, progress) for split, path in paths.items()
        }
    stage_seconds["read"] = progress.seconds
    lines = sum(split.lines for split in splits.values())

    stages: Dict[str, object] = {}  # each stage's part of the report
    if args.units == "words":
        with StageProgress("tokenize", lines) as progress:
            tokens, stages["tokenization"] = _tokenize(args, store, splits, progress)
        stage_seconds["tokenize"] = progress.seconds
    elif args.units == "wordpiece":
        started = time.monotonic()
        stages["wordpiece"], special_names = _wordpiece_vocabulary(args, splits["train"].chunks)
        stage_seconds["wordpiece"] = time.monotonic() - started
        with StageProgress("encode", lines) as progress:
            tokens, stages["encoding"] = _wordpiece_encode(
                args, store, splits, special_names, progress
            )
        stage_seconds["encode"] = progress.seconds
        stages.update(special_tokens=special_names, word_starts="wordpiece")
    else:
        text = {split: data.chunks for split, data in splits.items()}  # what SentencePiece reads
        if args.mode == "morph":
            sentences = sum(split.report.sentences_kept for split in splits.values())
            with StageProgress("segment", sentences) as progress:
                text, stages["segmentation"] = _segment(args, store, splits, progress)
            stage_seconds["segment"] = progress.seconds
        started = time.monotonic()
        model, stages["sentencepiece"] = _sentencepiece_model(args, text["train"])
        stage_seconds["sentencepiece"] = time.monotonic() - started
        with StageProgress("encode", lines) as progress:
            tokens, stages["encoding"] = _encode(args, model, store, text, splits, progress)
        stage_seconds["encode"] = progress.seconds

    report = {
        # wordpiece: the units of a tokenizer.json (morph.units), as an imported model's
        "units": "tokenizer" if args.units == "wordpiece" else args.units,
        "mode": args.mode,
        "lang": args.lang,
        "splits": {
            split: {
                **asdict(data.report),
                "words": data.words,
                "tokens": tokens[split],
                "tokens_per_word": round(tokens[split] / data.words, 4),
            }
            for split, data in splits.items()
        },
        **stages,
        "chunk_lines": args.chunk_lines,
        "workers": args.workers,
        "stage_seconds": {stage: round(seconds, 2) for stage, seconds in stage_seconds.items()},
    }
    atomic_write_json(args.out_dir / REPORT_FILE, report)
    store.remove()
    return report


def _read_split(
    split: str, path: Path, args: argparse.Namespace, store: ChunkStore, progress: StageProgress
) -> _Split:
    """Check and normalise one split into chunk files."""
    result = _Split(DocumentsReport(split, str(path)))
    lines = iter_documents(path, result.report, drop_bad_lines=split == "train")
    read_before = 0
    while True:
        chunk = list(islice(lines, args.chunk_lines))
        progress.update(result.report.lines_read - read_before)
        read_before = result.report.lines_read
        if not chunk:
            return result
        result.chunks.append(store.input_path(split, "txt", len(result.chunks)))
        atomic_write_lines(result.chunks[-1], chunk)
        result.words += sum(len(line.split()) for line in chunk)


def _sentences(chunks: Sequence[Path]) -> Iterator[str]:
    """The non-empty lines of `chunks`: the text without its document breaks."""
    return (line for path in chunks for line in read_chunk(path) if line)


def _segment(
    args: argparse.Namespace,
    store: ChunkStore,
    splits: Dict[str, _Split],
    progress: StageProgress,
) -> Tuple[Dict[str, List[Path]], Dict[str, object]]:
    """The segmented chunks of each split, and the segmentation report."""
    cache = None
    if args.lang in CACHING_SEGMENTERS:  # kept in OUT_DIR, so that a rerun starts where it stopped
        cache = str(args.out_dir / DEFAULT_SEGMENTATION_CACHE)
    training_lines = partial(_sentences, splits["train"].chunks)  # what Morfessor learns from
    segmented, built, totals, chunks = segment_chunks(
        store,
        open_segmenter(args.lang, args.workers, args.out_dir, training_lines, cache),
        _segment_chunk,
        {split: data.chunks for split, data in splits.items()},
        progress,
    )
    return segmented, {**built, **totals, **chunks}


def _segment_chunk(segmenter: Any, lines: Sequence[str]) -> Tuple[List[str], ChunkStats]:
    """The chunk's sentences segmented, its document breaks kept as empty lines; the
    segmenter's counters (of sentences)."""
    segmented, counters = segmenter.segment([line for line in lines if line])
    sentences = iter(segmented)
    return [next(sentences) if line else "" for line in lines], counters


def _sentencepiece_model(
    args: argparse.Namespace, train_text: List[Path]
) -> Tuple[SentencePieceModel, Dict[str, object]]:
    """The model (trained on the non-empty lines of `train_text`, reused from an earlier run,
    or given) and its part of the report."""
    model_path = args.out_dir / MODEL_FILE
    settings: Dict[str, object] = {"model": str(model_path)}
    if args.spm_model is not None:
        if args.spm_model.resolve() != model_path.resolve():
            atomic_write_bytes(model_path, args.spm_model.read_bytes())
        model = SentencePieceModel(model_path)
        settings["copied_from"] = str(args.spm_model)
    else:
        training_text = partial(_sentences, train_text)
        model, training = train_sentencepiece(
            args, training_text, model_path, args.out_dir / REPORT_FILE, keep_boundary_marks=False
        )
        settings.update(training)
    settings["vocab_size"] = model.vocab_size
    return model, settings


def _encode(
    args: argparse.Namespace,
    model: SentencePieceModel,
    store: ChunkStore,
    text: Dict[str, List[Path]],
    splits: Dict[str, _Split],
    progress: StageProgress,
) -> Tuple[Counter, Dict[str, int]]:
    """Encode and check every chunk in --workers processes into OUT_DIR/{split}.txt; the
    pieces of each split, and the chunks encoded and reused."""
    fingerprint = chunk_encoding.use_model(model)  # before the helpers fork
    tasks = {
        split: [
            chunk_encoding.EncodeTask(
                store.directory,
                fingerprint,
                text[split][index],
                normalised,
                str(args.out_dir / f"{split}.txt"),
                index * args.chunk_lines + 1,
            )
            for index, normalised in enumerate(data.chunks)
        ]
        for split, data in splits.items()
    }
    pieces: Counter = Counter()

    def collect(split: str, stats: ChunkStats) -> None:
        pieces[split] += sum(stats["pieces"].values())

    chunks = _run_chunks(
        args, store, chunk_encoding.STAGE, chunk_encoding.encode_chunk, tasks, collect, progress
    )
    return pieces, chunks


def _wordpiece_vocabulary(
    args: argparse.Namespace, train_chunks: List[Path]
) -> Tuple[Dict[str, object], Dict[str, str]]:
    """Train the WordPiece vocabulary and write tokenizer.json, vocab.txt and dict.txt; its part
    of the report and the special tokens' fairseq names."""
    from tokenizers import BertWordPieceTokenizer

    trainer = BertWordPieceTokenizer(lowercase=args.lowercase, strip_accents=args.strip_accents)
    trainer.train_from_iterator(
        _sentences(train_chunks),
        vocab_size=args.vocab_size,
        special_tokens=list(WORDPIECE_SPECIALS.values()),
        show_progress=False,
    )
    atomic_write_bytes(args.out_dir / TOKENIZER_FILE, trainer.to_str().encode("utf-8"))
    vocabulary = trainer.get_vocab()
    by_id = sorted(vocabulary, key=vocabulary.__getitem__)
    atomic_write_lines(args.out_dir / BERT_VOCABULARY_FILE, by_id)
    mapping = map_vocabulary(
        vocabulary, WORDPIECE_SPECIALS, len(vocabulary), args.out_dir / TOKENIZER_FILE
    )
    atomic_write_lines(args.out_dir / WORDS_DICTIONARY_FILE, mapping.dictionary_lines())
    settings = {
        "tokenizer": str(args.out_dir / TOKENIZER_FILE),
        "vocab_size": len(vocabulary),
        "lowercase": args.lowercase,
        "strip_accents": args.strip_accents,
    }
    return settings, mapping.special_names


@dataclass(frozen=True)
class _WordPieceTask:
    """One chunk to cut into WordPiece tokens, in whichever process takes it."""

    store: Path  # the ChunkStore's directory
    fingerprint: str
    chunk: Path
    tokenizer: Path
    special_names: Tuple[Tuple[str, str], ...]


def _wordpiece_encode(
    args: argparse.Namespace,
    store: ChunkStore,
    splits: Dict[str, _Split],
    special_names: Dict[str, str],
    progress: StageProgress,
) -> Tuple[Counter, Dict[str, int]]:
    """Cut every chunk into WordPiece tokens in --workers processes into OUT_DIR/{split}.txt;
    the tokens of each split, and the chunks cut and reused."""
    tokenizer = args.out_dir / TOKENIZER_FILE
    digest = hashlib.sha256(tokenizer.read_bytes()).hexdigest()[:16]
    fingerprint = f"{WORDPIECE_STAGE}:tokenizers {version('tokenizers')}:{digest}"
    names = tuple(sorted(special_names.items()))
    tasks = {
        split: [
            _WordPieceTask(store.directory, fingerprint, chunk, tokenizer, names)
            for chunk in data.chunks
        ]
        for split, data in splits.items()
    }
    tokens: Counter = Counter()

    def collect(split: str, stats: ChunkStats) -> None:
        tokens[split] += stats["tokens"]

    chunks = _run_chunks(args, store, WORDPIECE_STAGE, _wordpiece_chunk, tasks, collect, progress)
    return tokens, chunks


def _wordpiece_chunk(task: _WordPieceTask) -> ChunkResult:
    """(key, statistics, reused) of the cut chunk; see `chunk_store.process_chunk`."""
    units = _tokenizer_units(task.tokenizer, task.special_names)
    return process_chunk(
        ChunkStore(task.store),
        WORDPIECE_STAGE,
        task.fingerprint,
        [task.chunk],
        partial(_wordpiece_lines, units),
    )


@lru_cache(maxsize=None)
def _tokenizer_units(path: Path, special_names: Tuple[Tuple[str, str], ...]) -> TokenizerUnits:
    """One tokenizer per process."""
    return TokenizerUnits(path, dict(special_names))


def _wordpiece_lines(units: TokenizerUnits, lines: Sequence[str]) -> Tuple[List[str], ChunkStats]:
    """The chunk's lines as space-separated tokens, document breaks kept; the tokens' count."""
    cut = units.cut_sentences([line.split() for line in lines])
    encoded = [" ".join(token for tokens, _ in words for token in tokens) for words in cut]
    return encoded, {"lines": len(lines), "tokens": sum(len(line.split()) for line in encoded)}


@dataclass(frozen=True)
class _TokenizeTask:
    """One chunk to Moses-tokenize, in whichever process takes it."""

    store: Path  # the ChunkStore's directory
    fingerprint: str
    chunk: Path
    lang: str


def _tokenize(
    args: argparse.Namespace,
    store: ChunkStore,
    splits: Dict[str, _Split],
    progress: StageProgress,
) -> Tuple[Counter, Dict[str, int]]:
    """Moses-tokenize every chunk in --workers processes into OUT_DIR/{split}.txt and write
    dict.txt; the tokens of each split, and the chunks tokenized and reused."""
    fingerprint = f"{TOKENIZE_STAGE}:sacremoses {version('sacremoses')}:{args.lang}"
    tasks = {
        split: [
            _TokenizeTask(store.directory, fingerprint, chunk, args.lang) for chunk in data.chunks
        ]
        for split, data in splits.items()
    }
    tokens: Counter = Counter()
    train_counts: Counter = Counter()  # bounded by the vocabulary, not by the corpus
    other_words: Set[str] = set()  # the words of valid and test

    def collect(split: str, stats: ChunkStats) -> None:
        tokens[split] += sum(stats["words"].values())
        if split == "train":
            train_counts.update(stats["words"])
        else:
            other_words.update(stats["words"])

    chunks = _run_chunks(args, store, TOKENIZE_STAGE, _tokenize_chunk, tasks, collect, progress)
    # Valid/test words that training lacks follow with count 0: BERT-ELMo embeds every word from
    # its characters, so none of them should become <unk>.
    unseen = sorted(other_words - train_counts.keys())
    entries = sorted(train_counts.items(), key=lambda item: (-item[1], item[0])) + [
        (word, 0) for word in unseen
    ]
    atomic_write_lines(args.out_dir / WORDS_DICTIONARY_FILE, (f"{w} {c}" for w, c in entries))
    return tokens, chunks


def _tokenize_chunk(task: _TokenizeTask) -> ChunkResult:
    """(key, statistics, reused) of the tokenized chunk; see `chunk_store.process_chunk`."""
    compute = partial(_moses_tokenize, task.lang)
    return process_chunk(
        ChunkStore(task.store), TOKENIZE_STAGE, task.fingerprint, [task.chunk], compute
    )


def _moses_tokenize(lang: str, lines: Sequence[str]) -> Tuple[List[str], ChunkStats]:
    """The chunk's lines tokenized, document breaks kept; the count of each word."""
    tokenizer = _moses_tokenizer(lang)
    tokenized = [
        tokenizer.tokenize(line, escape=False, return_str=True) if line else "" for line in lines
    ]
    words = Counter(word for line in tokenized for word in line.split())
    return tokenized, {"lines": len(lines), "words": dict(words)}


@lru_cache(maxsize=None)
def _moses_tokenizer(lang: str) -> Any:
    """One tokenizer per process and language (it loads its nonbreaking prefixes)."""
    from sacremoses import MosesTokenizer

    return MosesTokenizer(lang=lang)


def _run_chunks(
    args: argparse.Namespace,
    store: ChunkStore,
    stage: str,
    function: Callable[[Any], ChunkResult],
    tasks: Dict[str, List[Any]],
    collect: Callable[[str, ChunkStats], None],
    progress: StageProgress,
) -> Dict[str, int]:
    """`run_chunk_stage` of `function` over each split's chunk tasks in --workers processes,
    each split's outputs concatenated into OUT_DIR/{split}.txt; the chunks done and reused."""
    _, chunks = run_chunk_stage(
        store,
        stage,
        function,
        tasks,
        progress,
        collect,
        lambda split: args.out_dir / f"{split}.txt",
        args.workers,
    )
    return chunks


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
    times = ", ".join(f"{stage} {seconds} s" for stage, seconds in report["stage_seconds"].items())
    logger.info("stages (%d worker(s)): %s", report["workers"], times)
    return 0


if __name__ == "__main__":
    configure_logging()
    sys.exit(main())
