#!/usr/bin/env bash
# Fine-tune a pretrained encoder of the project on prepared downstream data with the stock
# fairseq trainer, in one process: `fairseq-struct finetune` (fairseq_struct/downstream/finetune.py)
# with the interpreter scripts/lib/tools.sh finds. `--help` lists the options; the defaults are
# Table 2 of the BERT2D paper (Kaya & Tantuğ): batch 16 / 10 epochs / lr 5e-5 for NER and POS,
# 64 / 20 / 3e-5 for QA, 64 / 3 / 3e-5 for sentiment.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$root/scripts/lib/tools.sh"
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
exec "${TOOLS}python3" -m fairseq_struct finetune "$@"
