"""fairseq datasets of masked-LM pretraining (design.md §4.1, §4.4): masking, sentence pairs."""
