"""The embedded synthetic data the demos run on (no download needed): an English→Turkish corpus
and labelled Turkish from the same grammar.
"""
