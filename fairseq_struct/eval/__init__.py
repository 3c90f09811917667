"""Evaluation on raw text: hypotheses out of fairseq-generate's log, sacreBLEU scores with signatures.

fairseq-generate's own `--scoring sacrebleu` scores against the binarized references, which
is not a real sacreBLEU number; these modules score detokenized hypotheses against the raw
reference file instead (design.md §5.1).
"""
