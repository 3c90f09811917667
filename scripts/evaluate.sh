#!/usr/bin/env bash
# Translate a test set with stock fairseq-generate and score the plain-text output against the
# raw reference with sacreBLEU (BLEU 13a, chrF, chrF++, cased; docs/design.md §5.1).
#
# fairseq-generate's own --scoring compares against the binarized references, which is not a
# real sacreBLEU number; here the hypotheses are taken from the generate log in sentence order,
# turned back into plain words (pieces joined, morpheme boundary marks removed) and scored
# against the untouched reference file.
set -euo pipefail
check_only=0  # --check-options
if [[ "${1:-}" == --check-options ]]; then check_only=1; shift; fi

usage() {
    cat <<'EOF'
Usage: scripts/evaluate.sh DATA_BIN CHECKPOINT RAW_REFERENCE OUT_DIR [options] [-- GENERATE_ARGS...]

  DATA_BIN        binarized data directory (fairseq-preprocess --destdir)
  CHECKPOINT      model checkpoint, e.g. checkpoints/checkpoint_best.pt; several, joined by
                  ':' (checkpoints/a.pt:checkpoints/b.pt), decode as one ensemble (fairseq's --path)
  RAW_REFERENCE   raw target-side text of the generated subset, one sentence per line
  OUT_DIR         receives generate-SUBSET.log, hyp.txt and scores.json

Options:
  --beam N          beam size (default 5)
  --batch-size N    sentences per batch (default: fairseq-generate's --max-tokens 12000)
  --gen-subset S    subset to translate (default test)
  --task T          fairseq task (default translation_morph)
  --user-dir DIR    plugin directory (default: the installed or checked-out fairseq_struct)
  -h, --help        show this help
  --check-options   check the options, then stop without running anything (first argument)
Arguments after -- go to fairseq-generate unchanged (e.g. -- --cpu --lenpen 1.2).
Hypotheses stop at the length limit that scripts/prepare-*.sh fitted to the training pairs
(DATA_BIN/prepare_report.json's decoding_length, as validation decodes), unless --max-len-a or
--max-len-b follow --; without that report, at fairseq-generate's default (200 pieces).

Uses the tools of FAIRSEQ_STRUCT_TOOLS, else of .venv/bin of this checkout if it exists, else those on PATH.
EOF
}

if [[ $# -ge 1 && ($1 == -h || $1 == --help) ]]; then
    usage
    exit 0
fi
if [[ $# -lt 4 ]]; then
    usage >&2
    exit 2
fi
data_bin=$1 checkpoint=$2 reference=$3 out_dir=$4
shift 4

beam=5 batch_size="" subset=test task=translation_morph user_dir=""
generate_args=()
while [[ $# -gt 0 ]]; do
    if [[ $1 =~ ^--(beam|batch-size|gen-subset|task|user-dir)$ && $# -lt 2 ]]; then
        echo "evaluate.sh: $1 needs a value (see --help)" >&2
        exit 2
    fi
    case $1 in
        --beam) beam=$2; shift 2 ;;
        --batch-size) batch_size=$2; shift 2 ;;
        --gen-subset) subset=$2; shift 2 ;;
        --task) task=$2; shift 2 ;;
        --user-dir) user_dir=$2; shift 2 ;;
        -h | --help) usage; exit 0 ;;
        --) shift; generate_args=("$@"); break ;;
        *) echo "evaluate.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done
[[ "$check_only" == 0 ]] || exit 0  # --check-options: the options are valid

IFS=: read -r -a checkpoints <<<"$checkpoint"
for input in "$data_bin" "${checkpoints[@]}" "$reference"; do
    if [[ ! -e $input ]]; then
        echo "evaluate.sh: $input does not exist" >&2
        exit 1
    fi
done

repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$repo_root/scripts/lib/tools.sh"
python=${TOOLS}python3
# A checkout works without `pip install`: its package comes first on the path.
if [[ -d $repo_root/fairseq_struct ]]; then
    export PYTHONPATH=$repo_root${PYTHONPATH:+:$PYTHONPATH}
fi
if [[ -z $user_dir ]]; then
    user_dir=$(fairseq_struct_dir "$python")
fi

mkdir -p "$out_dir"
generate_log=$out_dir/generate-$subset.log
hypotheses=$out_dir/hyp.txt
scores=$out_dir/scores.json

# No --post-process: the log keeps SentencePiece pieces and generate_output restores the words.
# fairseq-fixed's dropped last batch is restored by the plugin itself (fixes/last_partial_batch), and
# generate_output checks that every sentence id is present.
generate=("${TOOLS}fairseq-generate" "$data_bin" --path "$checkpoint" --user-dir "$user_dir"
    --task "$task" --gen-subset "$subset" --beam "$beam")
if [[ -n $batch_size ]]; then
    generate+=(--batch-size "$batch_size")
fi
# The decoding length limit fitted to the training pairs (prepare_report.json's decoding_length,
# as validation decodes), unless the arguments after -- set one; else fairseq-generate's own.
if [[ -f $data_bin/prepare_report.json && " ${generate_args[*]-} " != *" --max-len-"[ab]* ]]; then
    limit=$("$python" -c 'import json, sys
limit = json.load(open(sys.argv[1], encoding="utf-8")).get("decoding_length")
print(*(limit and ("--max-len-a", limit["max_len_a"], "--max-len-b", limit["max_len_b"]) or ()))' "$data_bin/prepare_report.json")
    read -r -a limit_args <<<"$limit"
    generate+=(${limit_args[@]+"${limit_args[@]}"})
fi
echo "evaluate.sh: ${generate[*]} ${generate_args[*]} > $generate_log" >&2
# The output passes through generate_progress on its way to the log: a sentence counter with
# sentences/s and ETA (fairseq-generate's own bar counts batches of minutes each on a CPU).
sentences=$(wc -l <"$reference")
"${generate[@]}" --no-progress-bar "${generate_args[@]}" |
    "$python" -m fairseq_struct.eval.generate_progress "$generate_log" --total "$sentences"

"$python" -m fairseq_struct.eval.generate_output "$generate_log" --out "$hypotheses" \
    --ref "$reference"
"$python" -m fairseq_struct.eval.score --hyp "$hypotheses" --ref "$reference" --json "$scores"
echo "evaluate.sh: wrote $hypotheses and $scores" >&2
