#!/usr/bin/env bash
# Prepare a parallel corpus for fairseq: validate, segment the target side into morphemes (morph
# mode: Zemberek for Turkish, Morfessor Baseline learnt from the training split for Inuktitut),
# train one joint SentencePiece model, encode, then binarize with stock fairseq-preprocess. The
# data-bin directory also keeps spm.model, the raw valid/test text (for sacreBLEU),
# prepare_report.json and, for Inuktitut, the Morfessor model morfessor.iu.segm (reused when the
# script runs again into the same directory; delete it to learn from new training text).
# scripts/prepare-en-tr.sh and scripts/prepare-en-iu.sh call this with their languages.
set -euo pipefail
check_only=0  # --check-options
if [[ "${1:-}" == --check-options ]]; then check_only=1; shift; fi

usage() {
    cat <<EOF
usage: $(basename "$0") --tgt-lang tr|iu --train PREFIX --valid PREFIX --test PREFIX [options]

Each PREFIX names PREFIX.<src> and PREFIX.<tgt>: raw UTF-8 text, one sentence a line,
line-aligned (Inuktitut in syllabics or romanized).

options:
  --src-lang L       source language suffix (default: en; never segmented)
  --tgt-lang L       target language suffix: tr (Zemberek) or iu (Morfessor) for morph mode
  --mode bpe|morph   bpe: SentencePiece only; morph: morphological segmentation of the
                     target side, then SentencePiece (default: morph)
  --vocab-size N     joint SentencePiece vocabulary (default: 8000)
  --out DIR          output directory (default: data-bin/<src>-<tgt>-<mode>)
  --workers N        processes for segmentation, SentencePiece encoding and
                     fairseq-preprocess, and SentencePiece training threads (default: 1)
  --spm-threads N    SentencePiece training threads (default: --workers); the model
                     depends on it: keep it fixed to reproduce a model
  --chunk-lines N    lines per chunk: memory in use, and the work a killed run that is
                     started again does not redo (default: 50,000)
  --segmentation-cache FILE
                     Turkish: sqlite file of segmented lines reused across runs
  --spm-sample N     train SentencePiece on a seeded sample of N lines when the training
                     text has more (default: 10,000,000)
  --spm-model PATH   encode with an existing SentencePiece model (of an earlier run of this
                     script) instead of training one
  --dict DIR         binarize with the dictionaries of an earlier run (DIR/dict.<lang>.txt)
                     instead of building a joined one: for fine-tuning a pretrained model
  -h, --help         show this help
  --check-options    check the options, then stop without running anything (first argument)
EOF
}

src_lang="en" tgt_lang="" train="" valid="" test="" mode="morph" vocab_size=8000 out="" workers=1 cache_args=() prepare_args=() dict_dir=""
while [[ $# -gt 0 ]]; do
    if [[ "$1" != -h && "$1" != --help && $# -lt 2 ]]; then
        echo "error: $1 needs a value" >&2
        usage >&2
        exit 2
    fi
    case "$1" in
        --src-lang) src_lang="$2"; shift 2 ;;
        --tgt-lang) tgt_lang="$2"; shift 2 ;;
        --train) train="$2"; shift 2 ;;
        --valid) valid="$2"; shift 2 ;;
        --test) test="$2"; shift 2 ;;
        --mode) mode="$2"; shift 2 ;;
        --vocab-size) vocab_size="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --workers) workers="$2"; shift 2 ;;
        --segmentation-cache) cache_args=(--segmentation-cache "$2"); shift 2 ;;
        --spm-model) prepare_args+=(--spm-model "$2"); shift 2 ;;
        --spm-sample) prepare_args+=(--spm-sample "$2"); shift 2 ;;
        --spm-threads) prepare_args+=(--spm-threads "$2"); shift 2 ;;
        --chunk-lines) prepare_args+=(--chunk-lines "$2"); shift 2 ;;
        --dict) dict_dir="$2"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "error: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
done
if [[ -z "$tgt_lang" || -z "$train" || -z "$valid" || -z "$test" ]]; then
    echo "error: --tgt-lang, --train, --valid and --test are required" >&2
    usage >&2
    exit 2
fi
[[ "$check_only" == 0 ]] || exit 0  # --check-options: the options are valid
if [[ "$mode" != "bpe" && "$mode" != "morph" ]]; then
    echo "error: --mode must be bpe or morph, not '$mode'" >&2
    exit 2
fi
out="${out:-data-bin/$src_lang-$tgt_lang-$mode}"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/lib/tools.sh"
python="${TOOLS}python3"
preprocess="${TOOLS}fairseq-preprocess"
# A checkout works without installing the package.
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
# Some of Zemberek's analyses depend on Python's string hash seed: a fixed seed makes every run
# segment alike (and lets runs reuse each other's segmentation cache).
export PYTHONHASHSEED="${PYTHONHASHSEED:-0}"

"$python" -m fairseq_struct.morph.prepare \
    --src-lang "$src_lang" --tgt-lang "$tgt_lang" \
    --train "$train" --valid "$valid" --test "$test" \
    --mode "$mode" --vocab-size "$vocab_size" --workers "$workers" \
    --out-dir "$out" "${cache_args[@]}" "${prepare_args[@]}"

# prepare has just rewritten the pieces: a dictionary from an earlier run into this directory
# would not match them (and fairseq-preprocess refuses to overwrite it).
if [[ -n "$dict_dir" ]]; then
    for lang in "$src_lang" "$tgt_lang"; do
        if [[ ! -f "$dict_dir/dict.$lang.txt" ]]; then
            echo "error: $dict_dir/dict.$lang.txt does not exist" >&2
            exit 2
        fi
        cp "$dict_dir/dict.$lang.txt" "$out/given.dict.$lang.txt"
    done
    dictionary_args=(--srcdict "$out/given.dict.$src_lang.txt" --tgtdict "$out/given.dict.$tgt_lang.txt")
else
    dictionary_args=(--joined-dictionary)
fi
rm -f "$out/dict.$src_lang.txt" "$out/dict.$tgt_lang.txt"
"$preprocess" \
    --source-lang "$src_lang" --target-lang "$tgt_lang" \
    --trainpref "$out/train.sp" --validpref "$out/valid.sp" --testpref "$out/test.sp" \
    "${dictionary_args[@]}" --destdir "$out" --workers "$workers"
rm -f "$out/given.dict.$src_lang.txt" "$out/given.dict.$tgt_lang.txt"

echo "binarized data in $out (train with: fairseq-train $out --user-dir fairseq_struct ...)"
