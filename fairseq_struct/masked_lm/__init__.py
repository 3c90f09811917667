"""Masked-LM pretraining data (design.md §4): `python -m fairseq_struct.masked_lm.prepare`."""
