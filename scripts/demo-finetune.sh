#!/usr/bin/env bash
# The embedded fine-tuning demo, end to end on a CPU (run by `make demo-finetune`):
#   the masked-LM demo's pretrained encoders (scripts/demo-mlm.sh, run first when its
#   checkpoints are missing) → labelled Turkish from the same grammar (NER, POS, a sentence
#   label, templated questions over paragraphs) → downstream.prepare for each task and unit
#   type → scripts/finetune.sh for each encoder, pretrained and from scratch → downstream.predict
#   on the test split → one table: each task and encoder, pretrained next to from scratch.
# Nothing is downloaded. Finished steps are reused (delete demo-finetune-work/ to start over).
# Environment overrides:
#   DEMO_FT_WORK (demo-finetune-work)  DEMO_MLM_WORK (demo-mlm-work)  DEMO_FT_MODELS
#   ("roberta bert2d bert_elmo")  DEMO_FT_TASKS ("pos ner sentiment qa")  DEMO_FT_EPOCHS (all
#   tasks; default 15 for NER, 8 for the others)
set -euo pipefail
source "$(dirname "$0")/lib/demo-common.sh" "$@"
WORK="${DEMO_FT_WORK:-demo-finetune-work}"
MLM_WORK="${DEMO_MLM_WORK:-demo-mlm-work}"
MODELS="${DEMO_FT_MODELS:-roberta bert2d bert_elmo}"
TASKS="${DEMO_FT_TASKS:-pos ner sentiment qa}"
export PYTHONHASHSEED="${PYTHONHASHSEED:-0}"

step "1/5 pretrained encoders (the masked-LM demo)"
missing=0
for model in $MODELS; do
  [[ -s "$MLM_WORK/checkpoints-$model/checkpoint_best.pt" ]] || missing=1
done
if [[ "$missing" == 1 ]]; then
  DEMO_MLM_WORK="$MLM_WORK" DEMO_MLM_MODELS="$MODELS" bash scripts/demo-mlm.sh
else
  echo "reusing the checkpoints in $MLM_WORK"
fi

step "2/5 labelled Turkish from the demo grammar"
if [[ ! -s "$WORK/raw/qa/test.json" ]]; then
  python -m fairseq_struct.demo_data.synthetic_labelled_tr --out-dir "$WORK/raw"
fi

raw_args() {  # the raw files of one task and split, as downstream.prepare and predict take them
  local task=$1 split=$2
  case "$task" in
    ner) echo "$WORK/raw/ner/$split.conll" ;;
    pos) echo "$WORK/raw/pos/$split.conllu" ;;
    sentiment) ls "$WORK/raw/sentiment/$split".* | sort | tr '\n' ' ' ;;
    qa) echo "$WORK/raw/qa/$split.json" ;;
  esac
}
units_of() { if [[ "$1" == bert_elmo ]]; then echo words; else echo pieces; fi; }

step "3/5 prepare each task in the units of the pretraining runs (2 at a time)"
mkdir -p "$WORK/data"
prepare() {  # units task
  local units=$1 task=$2 out="$WORK/data/$1-$2"
  if [[ -s "$out/finetune.json" ]]; then return; fi
  # shellcheck disable=SC2046
  OMP_NUM_THREADS=1 python -m fairseq_struct.downstream.prepare "$task" \
    --pretraining-data "$MLM_WORK/bin-$units" --train $(raw_args "$task" train) \
    --valid $(raw_args "$task" valid) --max-positions 64 --max-length 64 --doc-stride 32 \
    --max-query-length 16 --out-dir "$out" > "$out.log" 2>&1 || { cat "$out.log" >&2; return 1; }
}
pending=()
for units in $(for m in $MODELS; do units_of "$m"; done | sort -u); do
  for task in $TASKS; do
    prepare "$units" "$task" & pending+=($!)
    if [[ ${#pending[@]} -eq 2 ]]; then
      for job in "${pending[@]}"; do wait "$job"; done
      pending=()
    fi
  done
done
for job in "${pending[@]}"; do wait "$job"; done

finetune() {  # model task init: fine-tune (pretrained) or train (scratch), then predict on test
  local model=$1 task=$2 init=$3
  local units; units=$(units_of "$model")
  local run="$WORK/runs/$model-$task-$init"
  if [[ -s "$run/scores.json" ]]; then return; fi
  local options=(--data "$WORK/data/$units-$task" --pretrained "$MLM_WORK/checkpoints-$model/checkpoint_best.pt"
                 --save-dir "$run/checkpoints" --cpu --seed 1)
  if [[ "$init" == scratch ]]; then options+=(--scratch); fi
  case "$task" in
    ner) options+=(--head lcrf_ner --entity-fix --epochs "${DEMO_FT_EPOCHS:-15}" --lr 1e-3) ;;
    pos) options+=(--epochs "${DEMO_FT_EPOCHS:-8}" --lr 1e-3) ;;
    sentiment) options+=(--epochs "${DEMO_FT_EPOCHS:-8}" --batch-size 16 --lr 5e-4) ;;
    qa) options+=(--epochs "${DEMO_FT_EPOCHS:-8}" --batch-size 16 --lr 1e-3) ;;
  esac
  mkdir -p "$run"
  OMP_NUM_THREADS=1 bash scripts/finetune.sh "${options[@]}" -- --log-format simple --log-interval 50 \
    > "$run/train.log" 2>&1 || { tail -30 "$run/train.log" >&2; return 1; }
  # shellcheck disable=SC2046
  OMP_NUM_THREADS=1 python -m fairseq_struct.downstream.predict "$run/checkpoints/checkpoint_best.pt" \
    --input $(raw_args "$task" test) --out-dir "$run" > "$run/predict.log" 2>&1 \
    || { cat "$run/predict.log" >&2; return 1; }
}

step "4/5 fine-tune each encoder on each task: pretrained and from scratch (2 at a time)"
for model in $MODELS; do
  for task in $TASKS; do
    echo "$model $task"
    finetune "$model" "$task" pretrained & first=$!
    finetune "$model" "$task" scratch & second=$!
    wait "$first"; wait "$second"
  done
done

step "5/5 scores on the test split"
python -m fairseq_struct.downstream.demo_summary --runs "$WORK/runs" --models $MODELS --tasks $TASKS \
  --json "$WORK/finetune_scores.json"
printf '\ndemo finished in %d s; figures in %s/finetune_scores.json\n' $((SECONDS - START)) "$WORK"
