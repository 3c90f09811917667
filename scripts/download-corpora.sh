#!/usr/bin/env bash
# Download one of the paper's corpora, verify it, clean the training data (Moses clean-corpus-n
# rules, with a report) and build the paper's splits; then print the commands that come next.
#
#   scripts/download-corpora.sh NAME --out raw/ [options]
#
# NAME:
#   opensubtitles-en-tr  OpenSubtitles2018 (OPUS) -> cleaned -> nested seeded subsets 1.4m, 5m and
#                        36m (the full corpus 80/10/10), each with train/valid/test (table 3)
#   setimes-en-tr        SETimes2 (OPUS) -> cleaned training data; valid/test are WMT
#                        newstest2017/2018 (fetched too, as wmt-en-tr)
#   hansard-en-iu        Nunavut Hansard 3.0, downloaded by hand into OUT/hansard-en-iu/ first;
#                        its train split is cleaned, its dev/test are kept as they are
#   wmt-en-tr            WMT newstest2017 (valid) and newstest2018 (test), en-tr
#   wmt20-en-iu          WMT20 newsdev2020 (valid) and newstest2020 (test), en-iu
# Options:
#   --out DIR            where everything goes (default raw)
#   --min N --max N      fewest / most whitespace tokens on a side (default 1 / 80)
#   --ratio R            largest token ratio between the sides (default 9, as in Moses)
#   --dedup              also remove exact duplicate pairs from the training data
#   --seed N             seed of the OpenSubtitles subsets (default 1)
#   --check-options      check the options, then stop without running anything (first argument)
# Downloads resume where they stopped; run the script again after an interruption.
set -euo pipefail
check_only=0  # --check-options
if [[ "${1:-}" == --check-options ]]; then check_only=1; shift; fi

# The comment block above, without the source that follows it.
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit "${1:-0}"; }

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$REPO/scripts/lib/tools.sh"
PYTHON="${TOOLS}python3"
# A checkout works without installing the package.
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"

[[ $# -ge 1 ]] || usage 2
[[ "$1" == -h || "$1" == --help ]] && usage 0
NAME="$1"; shift
OUT=raw MIN=1 MAX=80 RATIO=9 DEDUP=() SEED=1
while [[ $# -gt 0 ]]; do
  if [[ "$1" =~ ^--(out|min|max|ratio|seed)$ && $# -lt 2 ]]; then
    echo "download-corpora.sh: $1 needs a value" >&2; exit 2
  fi
  case "$1" in
    --out) OUT="$2"; shift 2 ;;
    --min) MIN="$2"; shift 2 ;;
    --max) MAX="$2"; shift 2 ;;
    --ratio) RATIO="$2"; shift 2 ;;
    --seed) SEED="$2"; shift 2 ;;
    --dedup) DEDUP=(--dedup); shift ;;
    -h|--help) usage 0 ;;
    *) echo "download-corpora.sh: unknown option '$1'" >&2; usage 2 ;;
  esac
done
[[ "$check_only" == 0 ]] || exit 0  # --check-options: the options are valid

fetch() { "$PYTHON" -m fairseq_struct.corpora.catalog fetch "$1" --out "$OUT"; }
clean() {  # clean SRC TGT OUT_PREFIX
  "$PYTHON" -m fairseq_struct.corpora.clean_corpus --src "$1" --tgt "$2" --out-prefix "$3" \
    --min "$MIN" --max "$MAX" --ratio "$RATIO" "${DEDUP[@]}"
}

case "$NAME" in
  opensubtitles-en-tr)
    DIR="$OUT/$NAME"
    fetch "$NAME"
    clean "$DIR/corpus.en" "$DIR/corpus.tr" "$DIR/clean"
    "$PYTHON" -m fairseq_struct.corpora.splits --src "$DIR/clean.en" --tgt "$DIR/clean.tr" \
      --out-dir "$DIR" --preset opensubtitles --seed "$SEED"
    cat <<EOF

Next, for each size (1.4m, 5m, 36m) and mode (bpe, morph), e.g. 1.4m morph:
  scripts/prepare-en-tr.sh --train $DIR/1.4m/train --valid $DIR/1.4m/valid --test $DIR/1.4m/test \\
      --mode morph --vocab-size 50000 --out data-bin/opensubtitles-1.4m-morph --workers 8
  scripts/train-en-tr.sh --data data-bin/opensubtitles-1.4m-morph \\
      --save-dir checkpoints/opensubtitles-1.4m-morph --profile paper
For the transfer experiment (pretrain here, fine-tune on SETimes):
  scripts/download-corpora.sh setimes-en-tr --out $OUT
  scripts/recipe-transfer-en-tr.sh --raw $OUT --size 5m --mode morph
EOF
    ;;
  setimes-en-tr)
    DIR="$OUT/$NAME"
    fetch "$NAME"
    fetch wmt-en-tr
    clean "$DIR/corpus.en" "$DIR/corpus.tr" "$DIR/train"
    cat <<EOF

Next (SETimes on its own; the paper fine-tunes on it, see scripts/recipe-transfer-en-tr.sh):
  scripts/prepare-en-tr.sh --train $DIR/train --valid $OUT/wmt-en-tr/valid \\
      --test $OUT/wmt-en-tr/test --mode morph --vocab-size 50000 --out data-bin/setimes-morph
  scripts/train-en-tr.sh --data data-bin/setimes-morph --save-dir checkpoints/setimes-morph
EOF
    ;;
  hansard-en-iu)
    DIR="$OUT/$NAME"
    fetch "$NAME"
    clean "$DIR/train.en" "$DIR/train.iu" "$DIR/train.clean"
    cat <<EOF

Next (Inuktitut has no morphological segmenter in prepare.py yet, so bpe mode):
  fairseq-struct prepare --src-lang en --tgt-lang iu --mode bpe \\
      --train $DIR/train.clean --valid $DIR/valid --test $DIR/test \\
      --vocab-size 50000 --out-dir data-bin/hansard-bpe
  fairseq-preprocess --source-lang en --target-lang iu --joined-dictionary \\
      --trainpref data-bin/hansard-bpe/train.sp --validpref data-bin/hansard-bpe/valid.sp \\
      --testpref data-bin/hansard-bpe/test.sp --destdir data-bin/hansard-bpe
  scripts/train-en-tr.sh --data data-bin/hansard-bpe --save-dir checkpoints/hansard-bpe
EOF
    ;;
  wmt-en-tr|wmt20-en-iu)
    fetch "$NAME"
    echo "valid and test sets in $OUT/$NAME (raw text, as sacreBLEU scores them)"
    ;;
  *) echo "download-corpora.sh: unknown corpus '$NAME'" >&2; usage 2 ;;
esac
