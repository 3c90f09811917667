"""Evaluation: translations scored with sacreBLEU against the raw reference files, not fairseq's
binarized ones (design.md §5.1), the papers' analyses, and the encoders' metrics and probes."""
