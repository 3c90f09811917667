"""What a sequence of SentencePiece pieces says about words, shared by preparation and models.

- `markers`: the word-start and morpheme-boundary marks every stage agrees on.
- `word_boundaries`: where words begin, from the dictionary alone (design.md §4), for whole-word
  masking, word positions and Whole-Word Attention.

Only torch and fairseq's `Dictionary` are imported here: the models and tasks use it in every
training worker.
"""
