"""Data for fairseq-struct: the embedded synthetic English→Turkish demo corpus and its checks."""
