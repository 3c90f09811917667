#!/usr/bin/env bash
# Prepare monolingual text for masked-LM pretraining: validate, (morph mode) segment into
# morphemes, encode with SentencePiece (pieces: bert2d, roberta) or tokenize into words
# (words: bert_elmo), then binarize with stock `fairseq-preprocess --only-source`.
# One sentence per line; empty lines separate documents (needed for --sentence-objective).
# The text is streamed in chunks (memory does not grow with the corpus); a killed run started
# again with the same arguments reuses the chunks it finished.
set -euo pipefail
check_only=0  # --check-options
if [[ "${1:-}" == --check-options ]]; then check_only=1; shift; fi

usage() {
    cat <<EOF
usage: $(basename "$0") --train FILE --valid FILE [--test FILE] --out DIR [options]

options:
  --units pieces|wordpiece|words
                        pieces: SentencePiece (bert2d, roberta); wordpiece: a WordPiece
                        vocabulary, as BERTurk's and BERT2D's (bert, bert2d); words:
                        Moses-tokenized words with a dictionary that covers every split
                        (bert_elmo) (default: pieces)
  --lowercase           wordpiece: an uncased vocabulary (lowercased; accents stripped, as in
                        BERT's uncased vocabularies, except for --lang de, whose umlauts stay)
  --keep-accents, --strip-accents
                        wordpiece --lowercase: keep or strip accents and umlauts, whatever
                        the language
  --mode bpe|morph      pieces only: morphological segmentation first (default: bpe); morph
                        has segmenters for tr and iu only (German: bpe, wordpiece or words)
  --lang L              language of the text: tr (Zemberek) or iu (Morfessor) for morph
                        mode; any other (de, ...) for bpe pieces, wordpiece, and words
                        (Moses' tokenization rules for L) (default: tr)
  --vocab-size N        SentencePiece or WordPiece vocabulary (default: 8000)
  --spm-model PATH      encode with an existing SentencePiece model instead of training one
  --spm-sample N        train SentencePiece on a seeded sample of N lines when the training
                        text has more (default: 10,000,000)
  --spm-threads N       SentencePiece training threads (default: --workers); the model
                        depends on it: keep it fixed to reproduce a model
  --chunk-lines N       lines per chunk: memory in use, and the work a killed run that is
                        started again does not redo (default: 50,000)
  --workers N           processes for segmentation, SentencePiece (training threads,
                        encoding and its round-trip check), Moses tokenization and
                        fairseq-preprocess (default: 1)
  -h, --help            show this help
  --check-options       check the options, then stop without running anything (first argument)
EOF
}

train="" valid="" test="" out="" units="pieces" mode="bpe" lang="tr" vocab_size=8000 workers=1 prepare_args=()
while [[ $# -gt 0 ]]; do
    if [[ "$1" != -h && "$1" != --help && "$1" != --lowercase && "$1" != --keep-accents &&
          "$1" != --strip-accents && $# -lt 2 ]]; then
        echo "error: $1 needs a value" >&2
        usage >&2
        exit 2
    fi
    case "$1" in
        --train) train="$2"; shift 2 ;;
        --valid) valid="$2"; shift 2 ;;
        --test) test="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --units) units="$2"; shift 2 ;;
        --lowercase) prepare_args+=(--lowercase); shift ;;
        --keep-accents|--strip-accents) prepare_args+=("$1"); shift ;;
        --mode) mode="$2"; shift 2 ;;
        --lang) lang="$2"; shift 2 ;;
        --vocab-size) vocab_size="$2"; shift 2 ;;
        --spm-model) prepare_args+=(--spm-model "$2"); shift 2 ;;
        --spm-sample) prepare_args+=(--spm-sample "$2"); shift 2 ;;
        --spm-threads) prepare_args+=(--spm-threads "$2"); shift 2 ;;
        --chunk-lines) prepare_args+=(--chunk-lines "$2"); shift 2 ;;
        --workers) workers="$2"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "error: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
done
if [[ -z "$train" || -z "$valid" || -z "$out" ]]; then
    echo "error: --train, --valid and --out are required" >&2
    usage >&2
    exit 2
fi
[[ "$check_only" == 0 ]] || exit 0  # --check-options: the options are valid

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/lib/tools.sh"
python="${TOOLS}python3"
preprocess="${TOOLS}fairseq-preprocess"
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
# Some of Zemberek's analyses depend on Python's string hash seed: a fixed seed makes every run
# segment alike (and lets runs reuse each other's segmentation cache).
export PYTHONHASHSEED="${PYTHONHASHSEED:-0}"

test_args=()
if [[ -n "$test" ]]; then test_args=(--test "$test"); fi
"$python" -m fairseq_struct.masked_lm.prepare \
    --train "$train" --valid "$valid" "${test_args[@]}" --out-dir "$out/text" \
    --units "$units" --mode "$mode" --lang "$lang" --vocab-size "$vocab_size" \
    --workers "$workers" "${prepare_args[@]}"

binarize_args=(--trainpref "$out/text/train.txt" --validpref "$out/text/valid.txt")
if [[ -n "$test" ]]; then binarize_args+=(--testpref "$out/text/test.txt"); fi
if [[ "$units" == "words" || "$units" == "wordpiece" ]]; then
    # words: every word of every split keeps its own id, so BERT-ELMo embeds it from its
    # characters; wordpiece: the whole vocabulary, in the order of its tokenizer.
    binarize_args+=(--srcdict "$out/text/dict.txt")
fi
rm -f "$out/dict.txt"  # fairseq-preprocess refuses to overwrite the dictionary of an earlier run
"$preprocess" --only-source "${binarize_args[@]}" --destdir "$out" --workers "$workers"
if [[ "$units" == "pieces" ]]; then cp "$out/text/spm.model" "$out/spm.model"; fi
if [[ "$units" == "wordpiece" ]]; then cp "$out/text/tokenizer.json" "$out/tokenizer.json"; fi

echo "binarized data in $out (train with: fairseq-train $out --user-dir fairseq_struct --task masked_lm_struct ...)"
