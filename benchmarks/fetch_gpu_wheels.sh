#!/usr/bin/env bash
# Fetch the wheels that the lent GPU machine lacks into .whl/ (git-ignored), for `run` to carry.
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
ls .whl
