"""Text to pieces: morphological segmentation and the joint SentencePiece model (design.md §3).

`fairseq-struct prepare` runs it all before fairseq-preprocess. Nothing is
imported here, so that each module loads only what it needs (Zemberek, sqlite, SentencePiece).
"""
