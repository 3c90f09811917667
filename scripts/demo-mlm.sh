#!/usr/bin/env bash
# The embedded masked-LM demo, end to end on a CPU (run by `make demo-mlm`):
#   synthetic Turkish text in documents → Zemberek morphemes + SentencePiece pieces (and
#   Moses words for BERT-ELMo) → stock fairseq-preprocess --only-source → fairseq-train with
#   whole-word masking for BERT (fairseq's roberta), BERT2D and BERT-ELMo → fairseq-validate →
#   masked-token accuracy of each against the unigram baseline.
# Finished steps are reused when the demo runs again (delete demo-mlm-work/ to start over).
# Environment overrides:
#   DEMO_MLM_WORK (demo-mlm-work)  DEMO_MLM_MAX_UPDATE (800)  DEMO_MLM_SENTENCES (20000)
#   DEMO_MLM_MODELS ("roberta bert2d bert_elmo")  DEMO_THREADS (2)
#   DEMO_MLM_CHAR_FILTERS (BERT-ELMo's --char-filters; default the paper's 1,056 filters)
set -euo pipefail
source "$(dirname "$0")/lib/demo-common.sh" "$@"
WORK="${DEMO_MLM_WORK:-demo-mlm-work}"
MAX_UPDATE="${DEMO_MLM_MAX_UPDATE:-800}"
SENTENCES="${DEMO_MLM_SENTENCES:-20000}"
MODELS="${DEMO_MLM_MODELS:-roberta bert2d bert_elmo}"
export OMP_NUM_THREADS="${DEMO_THREADS:-2}"

step "1/4 synthetic Turkish text, 5 sentences a document"
if [[ ! -s "$WORK/raw/valid.txt" ]]; then
  python -m fairseq_struct.demo_data.synthetic_en_tr --out-dir "$WORK/synthetic" --train "$SENTENCES" --valid 1000 --test 10 --seed 2
  mkdir -p "$WORK/raw"
  for split in train valid; do
    # An empty line after every 5th sentence: documents, as NSP/SOP pretraining data needs.
    awk 'NR > 1 && (NR - 1) % 5 == 0 { print "" } { print }' "$WORK/synthetic/$split.tr" > "$WORK/raw/$split.txt"
  done
fi

step "2/4 morphemes + SentencePiece (bert2d, roberta) and words (bert_elmo), fairseq-preprocess"
if [[ ! -s "$WORK/bin-pieces/valid.bin" ]]; then
  bash scripts/prepare-mlm.sh --train "$WORK/raw/train.txt" --valid "$WORK/raw/valid.txt" \
    --units pieces --mode morph --vocab-size 1000 --workers 2 --out "$WORK/bin-pieces"
fi
if [[ ! -s "$WORK/bin-words/valid.bin" ]]; then
  bash scripts/prepare-mlm.sh --train "$WORK/raw/train.txt" --valid "$WORK/raw/valid.txt" \
    --units words --out "$WORK/bin-words"
fi

common=(--user-dir fairseq_struct --task masked_lm_struct --criterion masked_lm_struct
        --mask-strategy whole_word --tokens-per-sample 64 --sample-break-mode eos --cpu --seed 1)
summary=()
for model in $MODELS; do
  batch=32
  case "$model" in
    roberta) data="$WORK/bin-pieces"; arch=(--arch roberta --encoder-layers 2 --encoder-embed-dim 128
               --encoder-ffn-embed-dim 512 --encoder-attention-heads 4 --max-positions 64) ;;
    bert2d) data="$WORK/bin-pieces"; arch=(--arch bert2d_tiny --max-positions 64) ;;
    # A sentence is ~2.2x fewer words than pieces: more sentences give as many masked targets.
    bert_elmo) data="$WORK/bin-words"; batch=96
               arch=(--arch bert_elmo_tiny --max-positions 64 --tokens-are-words
                     ${DEMO_MLM_CHAR_FILTERS:+--char-filters "$DEMO_MLM_CHAR_FILTERS"}) ;;
    *) echo "error: unknown model '$model' in DEMO_MLM_MODELS" >&2; exit 2 ;;
  esac
  step "3/4 pretraining $model ($MAX_UPDATE updates)"
  # Validated and saved every 100 updates and at the end, not also at each epoch's end (a small
  # corpus's epoch is a few dozen updates: BERT-ELMo's batches of 96 would validate every 16).
  fairseq-train "$data" "${common[@]}" "${arch[@]}" --save-dir "$WORK/checkpoints-$model" \
    --tensorboard-logdir "$WORK/checkpoints-$model/tensorboard" \
    --optimizer adam --adam-betas "(0.9, 0.98)" --lr 0.002 --lr-scheduler inverse_sqrt \
    --warmup-updates 50 --dropout 0.1 --batch-size "$batch" --max-update "$MAX_UPDATE" \
    --validate-interval 1000000 --save-interval 1000000 \
    --validate-interval-updates 100 --save-interval-updates 100 --keep-interval-updates 1 \
    --no-epoch-checkpoints --log-interval 50 --num-workers 0
  step "4/4 masked-token accuracy of $model on the validation text"
  fairseq-validate "$data" "${common[@]}" $([[ $model == bert_elmo ]] && echo --tokens-are-words) \
    --path "$WORK/checkpoints-$model/checkpoint_last.pt" --batch-size 64 --log-format json \
    --num-workers 0 2>&1 | tee "$WORK/validate-$model.log" | grep "| valid |"
  summary+=("$model=$WORK/validate-$model.log")
done

printf '\nmasked-token accuracy on %s/raw/valid.txt (whole-word masking, %s updates each):\n' "$WORK" "$MAX_UPDATE"
python -m fairseq_struct.eval.masked_lm_summary --json "$WORK/mlm_accuracy.json" "${summary[@]}"
printf '\ndemo finished in %d s; figures in %s/mlm_accuracy.json\n' $((SECONDS - START)) "$WORK"
