"""The papers' public corpora: the catalogue, download, cleaning and splitting.

- `catalog`: which corpora, where they come from, how they are verified and extracted
  (`python -m fairseq_struct.corpora.catalog fetch|list`).
- `download`: resumable HTTP downloads checked against size and checksum.
- `clean_corpus`: Moses clean-corpus-n filters over a raw parallel training corpus, streamed.
- `splits`: the paper's nested, seeded train/valid/test subsets (1.4m, 5m, 36m).
"""
