#!/usr/bin/env bash
# The paper's transfer experiment (Soulos et al., table 5): pretrain English->Turkish on an
# OpenSubtitles subset, fine-tune on SETimes with fairseq's --finetune-from-model, and score the
# fine-tuned model on the SETimes test set (WMT newstest2018) with scripts/evaluate.sh.
#
#   scripts/recipe-transfer-en-tr.sh [--raw raw] [--size 5m] [--mode morph] [options] [-- extra fairseq-train args]
#
# Needs the outputs of scripts/download-corpora.sh opensubtitles-en-tr and setimes-en-tr in --raw.
# Options:
#   --raw DIR          downloaded corpora (default raw)
#   --size NAME        OpenSubtitles subset to pretrain on: 1.4m, 5m or 36m (default 5m, as in
#                      table 5)
#   --mode bpe|morph   tokenization (default morph)
#   --vocab-size N     joint SentencePiece vocabulary (default 50000, the paper's)
#   --work DIR         data-bin, checkpoints and scores go here (default work/transfer-SIZE-MODE)
#   --workers N        processes for segmentation and preprocessing (default 1)
#   --gpus N           training processes (default 1)
#   --profile NAME     train-en-tr.sh profile, paper or cpu (default paper)
#   --cpu              train and evaluate on the CPU
#   --check-options    check the options, then stop without running anything (first argument)
# Each step is skipped when its output exists, so an interrupted recipe can be run again.
#
# Fine-tuning must see the pretrained model's vocabulary: SETimes is encoded with the
# OpenSubtitles spm.model and binarized with its dictionaries (prepare-en-tr.sh --spm-model
# --dict, i.e. fairseq-preprocess --srcdict --tgtdict).
set -euo pipefail
check_only=0  # --check-options
if [[ "${1:-}" == --check-options ]]; then check_only=1; shift; fi

# The comment block above, without the source that follows it.
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit "${1:-0}"; }

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"

RAW=raw SIZE=5m MODE=morph VOCAB=50000 WORK="" WORKERS=1 GPUS=1 PROFILE=paper CPU=()
while [[ $# -gt 0 ]]; do
  if [[ "$1" =~ ^--(raw|size|mode|vocab-size|work|workers|gpus|profile)$ && $# -lt 2 ]]; then
    echo "recipe-transfer-en-tr.sh: $1 needs a value" >&2; exit 2
  fi
  case "$1" in
    --raw) RAW="$2"; shift 2 ;;
    --size) SIZE="$2"; shift 2 ;;
    --mode) MODE="$2"; shift 2 ;;
    --vocab-size) VOCAB="$2"; shift 2 ;;
    --work) WORK="$2"; shift 2 ;;
    --workers) WORKERS="$2"; shift 2 ;;
    --gpus) GPUS="$2"; shift 2 ;;
    --profile) PROFILE="$2"; shift 2 ;;
    --cpu) CPU=(--cpu); shift ;;
    -h|--help) usage 0 ;;
    --) shift; break ;;
    *) echo "recipe-transfer-en-tr.sh: unknown option '$1'" >&2; usage 2 ;;
  esac
done
[[ "$check_only" == 0 ]] || exit 0  # --check-options: the options are valid
WORK="${WORK:-work/transfer-$SIZE-$MODE}"
PRETRAIN_RAW="$RAW/opensubtitles-en-tr/$SIZE"
SETIMES_TRAIN="$RAW/setimes-en-tr/train"
WMT="$RAW/wmt-en-tr"
for input in "$PRETRAIN_RAW/train.en" "$SETIMES_TRAIN.en" "$WMT/valid.en" "$WMT/test.tr"; do
  if [[ ! -f "$input" ]]; then
    echo "recipe-transfer-en-tr.sh: $input is missing; run scripts/download-corpora.sh" \
      "opensubtitles-en-tr and setimes-en-tr with --out $RAW first" >&2
    exit 1
  fi
done
PRETRAIN_BIN="$WORK/data-bin/opensubtitles-$SIZE"
FINETUNE_BIN="$WORK/data-bin/setimes"
PRETRAIN_CKPT="$WORK/checkpoints/pretrain"
FINETUNE_CKPT="$WORK/checkpoints/finetune"
CPU_EVAL=()
if [[ ${#CPU[@]} -gt 0 ]]; then CPU_EVAL=(-- --cpu); fi
set -x

# 1. OpenSubtitles: segment, train SentencePiece, encode, binarize.
if [[ ! -f "$PRETRAIN_BIN/dict.tr.txt" ]]; then
  "$REPO/scripts/prepare-en-tr.sh" --train "$PRETRAIN_RAW/train" --valid "$PRETRAIN_RAW/valid" \
    --test "$PRETRAIN_RAW/test" --mode "$MODE" --vocab-size "$VOCAB" --workers "$WORKERS" \
    --out "$PRETRAIN_BIN"
fi

# 2. Pretrain.
if [[ ! -f "$PRETRAIN_CKPT/checkpoint_best.pt" ]]; then
  "$REPO/scripts/train-en-tr.sh" --data "$PRETRAIN_BIN" --save-dir "$PRETRAIN_CKPT" \
    --profile "$PROFILE" --gpus "$GPUS" "${CPU[@]}" -- "$@"
fi

# 3. SETimes with the pretraining SentencePiece model (and its boundary-mark setting), segmenter
# and dictionaries, so that every token id means what it meant in pretraining.
if [[ ! -f "$FINETUNE_BIN/test.raw.tr" ]]; then
  "$REPO/scripts/prepare-en-tr.sh" --train "$SETIMES_TRAIN" --valid "$WMT/valid" \
    --test "$WMT/test" --mode "$MODE" --workers "$WORKERS" --out "$FINETUNE_BIN" \
    --spm-model "$PRETRAIN_BIN/spm.model" --dict "$PRETRAIN_BIN"
fi

# 4. Fine-tune from the best pretrained checkpoint. fairseq resets optimizer, scheduler and
# data loader for --finetune-from-model, and resumes from checkpoint_last.pt when one exists.
if [[ ! -f "$FINETUNE_CKPT/checkpoint_best.pt" ]]; then
  "$REPO/scripts/train-en-tr.sh" --data "$FINETUNE_BIN" --save-dir "$FINETUNE_CKPT" \
    --profile "$PROFILE" --gpus "$GPUS" "${CPU[@]}" \
    -- --finetune-from-model "$PRETRAIN_CKPT/checkpoint_best.pt" "$@"
fi

# 5. Score on the SETimes test set (newstest2018) against the raw reference.
"$REPO/scripts/evaluate.sh" "$FINETUNE_BIN" "$FINETUNE_CKPT/checkpoint_best.pt" \
  "$FINETUNE_BIN/test.raw.tr" "$WORK/eval/setimes-test" "${CPU_EVAL[@]}"
