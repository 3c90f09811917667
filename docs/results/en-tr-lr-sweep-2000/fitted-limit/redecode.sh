#!/usr/bin/env bash
# Decode the learning-rate sweep's best checkpoints again, with the length limit fitted to the
# training pairs (prepare_report.json's decoding_length, applied sentence by sentence), and
# test each TP-Transformer run against the baseline of its row (sacreBLEU's paired bootstrap).
# The sweep's checkpoints were chosen and first decoded before the fitted limit existed
# (validation at 1.2 x source + 10, test at fairseq-generate's 200 tokens).
#
# usage: redecode.sh DATA_BIN SWEEP OUT
#   DATA_BIN  the sweep's BPE data prepared again by scripts/prepare-parallel.sh (same command,
#             so the same SentencePiece model and dictionaries, now with decoding_length)
#   SWEEP     the directory holding the sweep's grids (lr0.001/, lr0.003/, ...)
#   OUT       where the hypotheses, scores and significance tests go
set -euo pipefail
data=$1 sweep=$2 out=$3
project=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../.." && pwd)

decode() {  # GRID RUN
    local target=$out/$1/$2
    [[ -s $target/scores.json ]] && return 0
    OMP_NUM_THREADS=1 bash "$project/scripts/evaluate.sh" "$data" \
        "$sweep/$1/runs/$2/checkpoints/checkpoint_best.pt" "$data/test.raw.tr" "$target" \
        --beam 5 -- --cpu
}

compare() {  # NAME BASELINE OTHER (each GRID/RUN)
    decode "${2%%/*}" "${2#*/}"
    decode "${3%%/*}" "${3#*/}"
    python -m fairseq_struct.eval.score --ref "$data/test.raw.tr" --paired-bs \
        --hyp "$out/$2/hyp.txt" --hyp "$out/$3/hyp.txt" > "$out/$1.paired-bs.txt"
}

compare lr0.001 lr0.001/bpe-transformer_relpos-seed1 lr0.001/bpe-tp_transformer-seed1
compare lr0.003 lr0.003/bpe-transformer_relpos-seed1 lr0.003/bpe-tp_transformer-seed1
compare lr0.006 lr0.006/bpe-transformer_relpos-seed1 lr0.006/bpe-tp_transformer-seed1
compare lr0.003-4000 lr0.003-4000/bpe-transformer_relpos-seed1 lr0.003-4000/bpe-tp_transformer-seed1
compare lr0.003-warmup1000 lr0.003/bpe-transformer_relpos-seed1 lr0.003-warmup1000/bpe-tp_transformer-seed1
compare seed1-best-rates lr0.003/bpe-transformer_relpos-seed1 lr0.006/bpe-tp_transformer-seed1
compare seed2-best-rates lr0.003/bpe-transformer_relpos-seed2 lr0.006/bpe-tp_transformer-seed2
