"""Masked-LM pretraining data preparation (SPEC section 4): `python -m fairseq_struct.masked_lm.prepare`."""
