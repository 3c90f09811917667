#!/usr/bin/env bash
# Train an English→Turkish (or English→Inuktitut) model with the stock fairseq-train.
#
#   scripts/train-en-tr.sh --data data-bin/en-tr-morph --save-dir checkpoints/tpt [options] [-- extra fairseq-train args]
#
# Profiles:
#   paper  the paper's settings (Soulos et al., supplementary §1): tp_transformer_base,
#          Adafactor with an external --lr and inverse square-root decay, 80 sentences per
#          GPU, dropout 0.1; BLEU on the validation set picks the best checkpoint and stops
#          training after --patience validations without improvement.
#   cpu    a small-CPU variant: tp_transformer_tiny, larger learning rate (0.003), short warm-up,
#          token-based batches; what the demo runs. On real text the TP-Transformer does better
#          at --lr 0.006 (the translation grid's default for it; docs/results/en-tr-tp-analysis.md).
# Options:
#   --arch NAME          override the profile's architecture (e.g. transformer_relpos_base)
#   --max-update N       stop after N updates (paper profile: until early stopping)
#   --lr LR              peak learning rate
#   --gpus N             start N processes with torchrun (one per GPU; with --cpu, N CPU workers)
#   --cpu                train on the CPU
#   --check-options      check the options, then stop without running anything (first argument)
#   --precision P        auto (default: bf16 on a GPU that has it, fp16 on an older GPU, fp32
#                        on the CPU), bf16, fp16 or fp32
#   --tgt-lang LANG      the target language; by default the one prepare_report.json in --data
#                        names (written by scripts/prepare-*.sh), so stock fairseq-preprocess
#                        data without a report needs it
# TensorBoard logs go to SAVE_DIR/tensorboard (tensorboard --logdir SAVE_DIR/tensorboard); add
# `-- --wandb-project NAME` to log to Weights & Biases as well (pip install wandb).
set -euo pipefail
check_only=0  # --check-options
if [[ "${1:-}" == --check-options ]]; then check_only=1; shift; fi

# The comment block above, without the source that follows it.
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit "${1:-0}"; }

REPO="$(cd "$(dirname "$0")/.." && pwd)"
source "$REPO/scripts/lib/tools.sh"
USER_DIR="$(fairseq_struct_dir "${TOOLS}python")"

DATA="" SAVE_DIR="" PROFILE="paper" ARCH="" MAX_UPDATE="" LR="" GPUS=1 CPU=0 PRECISION="auto" TGT_LANG=""
while [[ $# -gt 0 ]]; do
  if [[ "$1" =~ ^--(data|save-dir|profile|arch|max-update|lr|gpus|precision|tgt-lang)$ && $# -lt 2 ]]; then
    echo "train-en-tr.sh: $1 needs a value" >&2; usage 2
  fi
  case "$1" in
    --data) DATA="$2"; shift 2 ;;
    --save-dir) SAVE_DIR="$2"; shift 2 ;;
    --profile) PROFILE="$2"; shift 2 ;;
    --arch) ARCH="$2"; shift 2 ;;
    --max-update) MAX_UPDATE="$2"; shift 2 ;;
    --lr) LR="$2"; shift 2 ;;
    --gpus) GPUS="$2"; shift 2 ;;
    --cpu) CPU=1; shift ;;
    --precision) PRECISION="$2"; shift 2 ;;
    --tgt-lang) TGT_LANG="$2"; shift 2 ;;
    -h|--help) usage 0 ;;
    --) shift; break ;;
    *) echo "train-en-tr.sh: unknown option '$1'" >&2; usage 2 ;;
  esac
done
[[ -n "$DATA" && -n "$SAVE_DIR" ]] || { echo "train-en-tr.sh: --data and --save-dir are required" >&2; usage 2; }
[[ "$check_only" == 0 ]] || exit 0  # --check-options: the options are valid
[[ -f "$DATA/dict.en.txt" ]] || { echo "train-en-tr.sh: $DATA has no dict.en.txt; run scripts/prepare-en-tr.sh first" >&2; exit 2; }
if [[ -z "$TGT_LANG" ]]; then
  REPORT="$DATA/prepare_report.json"
  [[ -f "$REPORT" ]] || { echo "train-en-tr.sh: $REPORT is missing; pass --tgt-lang (or prepare the data with scripts/prepare-*.sh)" >&2; exit 2; }
  TGT_LANG="$("${TOOLS}python" -c 'import json, sys; print(json.load(open(sys.argv[1], encoding="utf-8"))["target_lang"])' "$REPORT")"
fi
# Validation BLEU decodes up to max_len_a × source + max_len_b pieces: the limit fitted to the
# training pairs (prepare_report.json's decoding_length, fairseq_struct/morph/length_limit.py),
# else 1.2 × source + 10.
MAX_LEN_A=1.2 MAX_LEN_B=10
if [[ -f "$DATA/prepare_report.json" ]]; then
  LIMIT="$("${TOOLS}python" -c 'import json, sys
limit = json.load(open(sys.argv[1], encoding="utf-8")).get("decoding_length")
print(*(limit and (limit["max_len_a"], limit["max_len_b"]) or (1.2, 10)))' "$DATA/prepare_report.json")"
  read -r MAX_LEN_A MAX_LEN_B <<< "$LIMIT"
fi
[[ -f "$DATA/dict.$TGT_LANG.txt" ]] || { echo "train-en-tr.sh: $DATA has no dict.$TGT_LANG.txt for target language '$TGT_LANG'" >&2; exit 2; }

case "$PROFILE" in
  paper)
    PROFILE_ARGS=(--arch "${ARCH:-tp_transformer_base}" --batch-size 80
      --lr "${LR:-0.001}" --warmup-updates 4000 --patience 10
      --validate-interval-updates 2000 --save-interval-updates 2000 --keep-interval-updates 2
      --eval-bleu-args "{\"beam\": 5, \"max_len_a\": $MAX_LEN_A, \"max_len_b\": $MAX_LEN_B}") ;;
  cpu)
    PROFILE_ARGS=(--arch "${ARCH:-tp_transformer_tiny}" --max-tokens 4096
      --lr "${LR:-0.003}" --warmup-updates 300
      --validate-interval 1000 --save-interval 1000
      --validate-interval-updates 500 --save-interval-updates 500 --keep-interval-updates 1
      --eval-bleu-args "{\"beam\": 1, \"max_len_a\": $MAX_LEN_A, \"max_len_b\": $MAX_LEN_B}") ;;
  *) echo "train-en-tr.sh: unknown profile '$PROFILE' (paper|cpu)" >&2; exit 2 ;;
esac
[[ -n "$MAX_UPDATE" ]] && PROFILE_ARGS+=(--max-update "$MAX_UPDATE")
[[ "$CPU" == 1 ]] && PROFILE_ARGS+=(--cpu --distributed-backend gloo)
if [[ "$PRECISION" == auto ]]; then
  PRECISION=fp32
  if [[ "$CPU" != 1 ]]; then
    PRECISION="$("${TOOLS}python" -c 'import torch; c = torch.cuda; print(("bf16" if c.is_bf16_supported() else "fp16") if c.is_available() else "fp32")')"
  fi
fi
case "$PRECISION" in
  bf16) PROFILE_ARGS+=(--bf16) ;;
  fp16) PROFILE_ARGS+=(--fp16) ;;
  fp32) ;;
  *) echo "train-en-tr.sh: --precision must be auto, bf16, fp16 or fp32, not '$PRECISION'" >&2; exit 2 ;;
esac

TRAIN=("${TOOLS}fairseq-train")
if [[ "$GPUS" -gt 1 ]]; then TRAIN=("${TOOLS}torchrun" --nproc_per_node "$GPUS" "$(command -v "${TOOLS}fairseq-train")"); fi

set -x
"${TRAIN[@]}" "$DATA" \
  --user-dir "$USER_DIR" --task translation_morph --source-lang en --target-lang "$TGT_LANG" \
  --share-all-embeddings \
  --optimizer adafactor --lr-scheduler inverse_sqrt \
  --dropout 0.1 \
  --criterion label_smoothed_cross_entropy --label-smoothing 0.1 \
  --eval-bleu --best-checkpoint-metric bleu --maximize-best-checkpoint-metric \
  --save-dir "$SAVE_DIR" --no-epoch-checkpoints --tensorboard-logdir "$SAVE_DIR/tensorboard" \
  --log-format simple --log-interval 50 \
  "${PROFILE_ARGS[@]}" "$@"
