#!/usr/bin/env bash
# Fine-tune a pretrained encoder of the project on prepared downstream data with the stock
# fairseq-train (fairseq's RoBERTa recipe: --restore-file ... --reset-optimizer
# --reset-dataloader --reset-meters; Adam, polynomial decay with 6% warm-up), or train the same
# architecture from scratch (--scratch) as the baseline. The architecture and every structure
# option are read from the pretraining checkpoint (fairseq-struct encoder-options).
# Defaults are Table 2 of the BERT2D paper (Kaya & Tantuğ): batch 16 / 10 epochs / lr 5e-5 for
# NER and POS, 64 / 20 / 3e-5 for QA, 64 / 3 / 3e-5 for sentiment.
set -euo pipefail
check_only=0  # --check-options
if [[ "${1:-}" == --check-options ]]; then check_only=1; shift; fi

usage() {
    cat <<EOF
usage: $(basename "$0") --data DIR --pretrained CHECKPOINT --save-dir DIR [options] [-- fairseq-train options]

  --data DIR            output of fairseq-struct prepare-downstream (its task is read
                        from DIR/finetune.json: sentiment, ner, pos or qa)
  --pretrained PATH     a pretraining checkpoint (roberta, bert2d or bert_elmo of the project),
                        or the directory of an imported model (fairseq-struct import-hf)
  --save-dir DIR        where fine-tuned checkpoints go (checkpoint_best.pt: best validation
                        F1 for ner, sentiment and qa; accuracy for pos; model_best.pt: its
                        model without Adam's state, to predict and export with)
options:
  --scratch             same architecture, randomly initialised (the from-scratch baseline)
  --head H              ner/pos: softmax (default), cse, lcrf, lcrf_ner
  --entity-fix          ner: decode with the Entity-Fix rule
  --epochs N, --batch-size N, --lr X    override the task's defaults
  --seed N              (default 1)
  --cpu                 train on the CPU
  -h, --help            show this help
  --check-options       check the options, then stop without running anything (first argument)
TensorBoard logs go to SAVE_DIR/tensorboard; add \`-- --wandb-project NAME\` for Weights & Biases.
EOF
}

data="" pretrained="" save_dir="" scratch=0 head="softmax" entity_fix=0 epochs="" batch="" lr=""
seed=1 cpu=()
extra=()
while [[ $# -gt 0 ]]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --) shift; extra=("$@"); break ;;
        --scratch) scratch=1; shift; continue ;;
        --entity-fix) entity_fix=1; shift; continue ;;
        --cpu) cpu=(--cpu); shift; continue ;;
    esac
    if [[ $# -lt 2 ]]; then echo "error: $1 needs a value" >&2; usage >&2; exit 2; fi
    case "$1" in
        --data) data="$2" ;;
        --pretrained) pretrained="$2" ;;
        --save-dir) save_dir="$2" ;;
        --head) head="$2" ;;
        --epochs) epochs="$2" ;;
        --batch-size) batch="$2" ;;
        --lr) lr="$2" ;;
        --seed) seed="$2" ;;
        *) echo "error: unknown argument $1" >&2; usage >&2; exit 2 ;;
    esac
    shift 2
done
if [[ -z "$data" || -z "$pretrained" || -z "$save_dir" ]]; then
    echo "error: --data, --pretrained and --save-dir are required" >&2
    usage >&2
    exit 2
fi
[[ "$check_only" == 0 ]] || exit 0  # --check-options: the options are valid

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/lib/tools.sh"
python="${TOOLS}python3"
train="${TOOLS}fairseq-train"
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"

read -r task items max_positions < <("$python" - "$data/finetune.json" <<'EOF'
import json, sys
with open(sys.argv[1], encoding="utf-8") as file:
    report = json.load(file)
train = report["splits"]["train"]
print(report["task"], train.get("windows", train.get("items")), report["max_positions"])
EOF
)
case "$task" in
    ner|pos) d_batch=16; d_epochs=10; d_lr=5e-5 ;;
    qa) d_batch=64; d_epochs=20; d_lr=3e-5 ;;
    sentiment) d_batch=64; d_epochs=3; d_lr=3e-5 ;;
    *) echo "error: $data/finetune.json names the unknown task '$task'" >&2; exit 2 ;;
esac
batch="${batch:-$d_batch}"; epochs="${epochs:-$d_epochs}"; lr="${lr:-$d_lr}"
updates=$(( (items + batch - 1) / batch * epochs ))
warmup=$(( updates * 6 / 100 ))

if [[ -d "$pretrained" ]]; then pretrained="$pretrained/model.pt"; fi  # an imported model
read -r -a encoder < <("$python" -m fairseq_struct.downstream.encoder_options "$pretrained")
case "$task" in
    sentiment)
        classes=$(( $(wc -l < "$data/label/dict.txt") ))
        task_args=(--task sentence_prediction --criterion sentence_prediction_f1
                   --num-classes "$classes" --init-token 0 --separator-token 2
                   --best-checkpoint-metric f1 --maximize-best-checkpoint-metric) ;;
    ner|pos)
        metric=f1; if [[ "$task" == pos ]]; then metric=accuracy; fi
        task_args=(--task token_classification --criterion token_classification --head "$head"
                   --best-checkpoint-metric "$metric" --maximize-best-checkpoint-metric)
        if [[ "$entity_fix" == 1 ]]; then task_args+=(--entity-fix); fi ;;
    qa)
        # Validation answers are gathered from every GPU as lists, not summed: room for them.
        task_args=(--task extractive_qa --criterion extractive_qa --all-gather-list-size 8388608
                   --best-checkpoint-metric f1 --maximize-best-checkpoint-metric) ;;
esac
restore=()
if [[ "$scratch" == 0 ]]; then
    restore=(--restore-file "$pretrained" --reset-optimizer --reset-dataloader --reset-meters)
fi

rm -f "$save_dir/model_best.pt"  # written below from this run's checkpoint_best.pt
set -x
"$train" "$data" --user-dir "$root/fairseq_struct" "${task_args[@]}" "${encoder[@]}" \
    --max-positions "$max_positions" "${restore[@]}" \
    --optimizer adam --adam-betas "(0.9, 0.98)" --adam-eps 1e-06 --weight-decay 0.01 \
    --clip-norm 0.0 --lr "$lr" --lr-scheduler polynomial_decay \
    --total-num-update "$updates" --warmup-updates "$warmup" --max-update "$updates" \
    --batch-size "$batch" --max-epoch "$epochs" --seed "$seed" \
    --save-dir "$save_dir" --no-epoch-checkpoints --no-last-checkpoints \
    --tensorboard-logdir "$save_dir/tensorboard" \
    --num-workers 0 "${cpu[@]}" "${extra[@]}"
# The model without Adam's state, a third of checkpoint_best.pt: the file to predict, export and
# share (docs/finetuning.md); checkpoint_best.pt keeps the state to resume training from.
if [[ -f "$save_dir/checkpoint_best.pt" ]]; then
    "$python" -m fairseq_struct.model_checkpoint "$save_dir/checkpoint_best.pt" \
        --output "$save_dir/model_best.pt"
fi
