"""Text to pieces: morphological segmentation and the joint SentencePiece model (design.md §3).

- `turkish`: `TurkishSegmenter`, Zemberek morphemes with sentence-level disambiguation
  ("göremediklerimizden" -> "gör￭eme￭dik￭ler￭imiz￭den"), fast and identical to the reference.
- `sentencepiece_model`: `SentencePieceModel`, one joint model whose pieces never cross a
  morpheme boundary and always spell the original line again.
- `inuktitut`: `InuktitutSegmenter`, Morfessor Baseline learnt from the training text.
- `segmenters`: both segmenters behind one interface, a chunk of lines at a time, with their
  worker processes kept across chunks.
- `zemberek`: an exact, faster port of the parts of zemberek-python the Turkish segmenter
  spends its time in (word analysis, the perceptron disambiguator), checked against it.
- `units`: a pretraining run's units (pieces or words), so that fine-tuning and the probes cut
  text as the pretraining did.
- `chunk_store`, `chunk_encoding`: the chunk files a streamed preparation works through and
  resumes from, and the SentencePiece encoding (with its round-trip check) of one chunk in a
  worker process.
- `prepare`: the command line that runs all of it before stock fairseq-preprocess
  (`python -m fairseq_struct.morph.prepare`, or `scripts/prepare-en-tr.sh`), in memory that
  does not grow with the corpus.

The word-start and morpheme-boundary marks live in `fairseq_struct.pieces.markers`, which the
models share. Nothing is imported here, so that a module of this package loads only what it
needs (Zemberek, sqlite and SentencePiece only where they are used).
"""
