"""The embedded synthetic data the demos run on (no download needed).

- `synthetic_en_tr`: a small English→Turkish grammar with real Turkish morphology.
- `synthetic_labelled_tr`: labelled Turkish (sentiment, NER, POS, QA) from the same grammar.
"""
