"""Masked-LM pretraining data (SPEC section 4): word boundaries, masking, sentence pairs."""
