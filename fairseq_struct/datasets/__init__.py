"""fairseq datasets of masked-LM pretraining (SPEC 4.1, 4.4): masking and sentence pairs."""
