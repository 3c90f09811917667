#!/usr/bin/env bash
# The embedded English→Turkish demo, end to end on a CPU (run by `make demo`):
#   synthetic corpus → Zemberek morphological segmentation → boundary-preserving SentencePiece
#   → stock fairseq-preprocess → fairseq-train (tp_transformer_tiny) → stock fairseq-generate
#   → sacreBLEU BLEU / chrF / chrF++ against the raw references.
# Finished steps are reused when the demo runs again (delete demo-work/ and
# data-bin/demo-en-tr-morph/ to start over). Environment overrides:
#   DEMO_WORK (demo-work)  DEMO_MODE (morph|bpe)  DEMO_MAX_UPDATE (800)  DEMO_THREADS (2)
#   DEMO_TRAIN_PAIRS (20000)  DEMO_VALID_PAIRS (500)  DEMO_DATA (data-bin/demo-en-tr-<mode>)
#   DEMO_MAX_TOKENS (the cpu profile's 4096 target tokens a batch)
set -euo pipefail
source "$(dirname "$0")/lib/demo-common.sh" "$@"
WORK="${DEMO_WORK:-demo-work}"
MODE="${DEMO_MODE:-morph}"
MAX_UPDATE="${DEMO_MAX_UPDATE:-800}"
TRAIN_PAIRS="${DEMO_TRAIN_PAIRS:-20000}"
VALID_PAIRS="${DEMO_VALID_PAIRS:-500}"
BATCH=(); [[ -n "${DEMO_MAX_TOKENS:-}" ]] && BATCH=(--max-tokens "$DEMO_MAX_TOKENS")
DATA="${DEMO_DATA:-data-bin/demo-en-tr-$MODE}"
export OMP_NUM_THREADS="${DEMO_THREADS:-2}"

step "1/5 synthetic English→Turkish corpus"
if [[ ! -s "$WORK/raw/test.tr" ]]; then
  python -m fairseq_struct.demo_data.synthetic_en_tr --out-dir "$WORK/raw" --train "$TRAIN_PAIRS" --valid "$VALID_PAIRS" --test 500 --seed 1
fi
# Under the hash seed the preparations fix (scripts/prepare-parallel.sh): some of Zemberek's
# analyses depend on it, so the coverage is that of the segmentation that follows.
PYTHONHASHSEED="${PYTHONHASHSEED:-0}" python -m fairseq_struct.eval.zemberek_coverage "$WORK/raw/train.tr"

step "2/5 segmentation ($MODE), SentencePiece, fairseq-preprocess"
if [[ ! -s "$DATA/test.en-tr.tr.bin" ]]; then
  bash scripts/prepare-en-tr.sh --train "$WORK/raw/train" --valid "$WORK/raw/valid" --test "$WORK/raw/test" \
    --mode "$MODE" --vocab-size 2000 --workers 2 --out "$DATA"
fi

step "3/5 training tp_transformer_tiny ($MAX_UPDATE updates)"
bash scripts/train-en-tr.sh --profile cpu --cpu --data "$DATA" --save-dir "$WORK/checkpoints-$MODE" \
  --max-update "$MAX_UPDATE" -- --seed 1 --num-workers 0 "${BATCH[@]}"

step "4/5 + 5/5 fairseq-generate (beam 5) and sacreBLEU on the raw references"
bash scripts/evaluate.sh "$DATA" "$WORK/checkpoints-$MODE/checkpoint_best.pt" "$WORK/raw/test.tr" "$WORK/eval-$MODE" --beam 5

printf '\ndemo finished in %d s; scores in %s/eval-%s/scores.json\n' $((SECONDS - START)) "$WORK" "$MODE"
