#!/usr/bin/env bash
# The data of the small-scale encoder grid (docs/results/README.md, "Encoders"), cut from
# ../shared/data with no randomness:
#   bash docs/results/tr-encoders-small/make_data.sh ../shared/data OUT_DIR
# OUT_DIR/pretrain/{train,valid}.txt: tr-raw's Turkish Wikipedia sentences, the last 500 for
# validation; OUT_DIR/tasks/: the layout `grid.encoders --tasks-dir` reads:
# ner: the first 2,000 WikiNER training sentences (valid: a seeded tenth, by the grid), the
#      1,000 dev sentences as test; pos: UD IMST train/dev/test as released; sentiment: the
#      first 500 reviews of each class as test, the next 2,000 of each as train; qa: TQuAD's
#      articles 3-40 as test (423 questions) and 101-200 as train (643 questions); its first two
#      articles hold 793 questions alone.
set -euo pipefail
shared=$1 out=$2/tasks
mkdir -p "$2/pretrain" "$out"/{ner,pos,sentiment,qa}
head -n -500 "$shared/tr-raw/tr_wikiner_train_sentences.txt" >"$2/pretrain/train.txt"
tail -n 500 "$shared/tr-raw/tr_wikiner_train_sentences.txt" >"$2/pretrain/valid.txt"
awk 'BEGIN { RS = ""; ORS = "\n\n" } NR <= 2000' "$shared/tr-wikiner/train.conll" >"$out/ner/train.conll"
cp "$shared/tr-wikiner/dev.conll" "$out/ner/test.conll"
for split in train dev test; do
    name=$split; [[ $split == dev ]] && name=valid
    cp "$shared/ud-tr-imst/tr_imst-ud-$split.conllu" "$out/pos/$name.conllu"
done
for label in pos neg; do
    head -n 500 "$shared/tr-sentiment/train.$label" >"$out/sentiment/test.$label"
    sed -n 501,2500p "$shared/tr-sentiment/train.$label" >"$out/sentiment/train.$label"
done
python3 - "$shared/tr-tquad/train-v0.1.json" "$out/qa" <<'PY'
import json, sys
source, out = sys.argv[1:]
squad = json.load(open(source, encoding="utf-8"))
for name, articles in (("test", squad["data"][2:40]), ("train", squad["data"][100:200])):
    with open(f"{out}/{name}.json", "w", encoding="utf-8") as file:
        json.dump({"version": squad.get("version", "1.1"), "data": articles}, file, ensure_ascii=False)
PY
