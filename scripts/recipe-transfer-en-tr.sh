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
# Each step is skipped when its output exists, so an interrupted recipe can be run again.
#
# Fine-tuning must see the pretrained model's vocabulary: SETimes is encoded with the
# OpenSubtitles spm.model and binarized with its dictionary (fairseq-preprocess --srcdict
# --tgtdict). morph.prepare always trains a new SentencePiece model, so that step is done here
# with the package's modules directly.
set -euo pipefail

usage() { sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN=""
if [[ -x "$REPO/.venv/bin/python" ]]; then BIN="$REPO/.venv/bin/"; fi
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

# 3. SETimes with the pretraining SentencePiece model, boundary-mark setting and segmenter.
if [[ ! -f "$FINETUNE_BIN/test.raw.tr" ]]; then
  "${BIN}python" - "$PRETRAIN_BIN" "$FINETUNE_BIN" "$MODE" "$WORKERS" \
    "$SETIMES_TRAIN" "$WMT/valid" "$WMT/test" <<'EOF'
import json
import sys
from pathlib import Path

from fairseq_struct.morph.corpus_io import atomic_write_lines, read_parallel, split_paths
from fairseq_struct.morph.markers import pieces_to_text
from fairseq_struct.morph.prepare import SEGMENTERS
from fairseq_struct.morph.sentencepiece_model import SentencePieceModel

pretrain, out, mode, workers, *prefixes = sys.argv[1:]
workers = int(workers)
settings = json.loads((Path(pretrain) / "prepare_report.json").read_text())["sentencepiece"]
model = SentencePieceModel(Path(pretrain) / "spm.model", settings["keep_boundary_marks"])
for split, prefix in zip(("train", "valid", "test"), prefixes):
    # Same rules as morph.prepare: bad train pairs are dropped, a bad valid/test pair stops.
    data = read_parallel(*split_paths(prefix, "en", "tr"), split, split == "train")
    target = SEGMENTERS["tr"](data.target, workers)[0] if mode == "morph" else data.target
    for lang, raw, text in (("en", data.source, data.source), ("tr", data.target, target)):
        pieces = model.encode_lines(text, num_threads=workers)
        for number, (line_pieces, line) in enumerate(zip(pieces, raw), start=1):
            if pieces_to_text(line_pieces) != line:
                sys.exit(f"{prefix}.{lang}:{number}: the pieces do not spell the line again")
        atomic_write_lines(Path(out) / f"{split}.sp.{lang}", (" ".join(p) for p in pieces))
        if split != "train":
            atomic_write_lines(Path(out) / f"{split}.raw.{lang}", raw)
    print(f"{split}: {data.report.pairs_kept} of {data.report.pairs_read} pairs encoded")
EOF
  # The pretraining dictionary, so that every token id means what it meant in pretraining.
  "${BIN}fairseq-preprocess" --source-lang en --target-lang tr \
    --trainpref "$FINETUNE_BIN/train.sp" --validpref "$FINETUNE_BIN/valid.sp" \
    --testpref "$FINETUNE_BIN/test.sp" \
    --srcdict "$PRETRAIN_BIN/dict.en.txt" --tgtdict "$PRETRAIN_BIN/dict.tr.txt" \
    --destdir "$FINETUNE_BIN" --workers "$WORKERS"
  cp "$PRETRAIN_BIN/spm.model" "$FINETUNE_BIN/spm.model"
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
