"""Masked-LM pretraining data (design.md §4): `fairseq-struct prepare-mlm`."""
