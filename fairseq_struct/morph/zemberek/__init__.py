"""An exact, faster port of the parts of zemberek-python that Turkish segmentation spends its time in.

zemberek-python (a line-by-line port of Zemberek's Java) is the reference: it is installed and
imported, its lexicon, suffix graph and perceptron model are used as they are, and these modules
replace only the slow inner loops, keeping every result identical. `morph.turkish` uses them.

What is re-implemented, and how:
- `fast_analysis`: word analysis (`RuleBasedAnalyzer`). The breadth-first walk of the suffix
  graph is Zemberek's; what depends only on (state, phonetic attributes) is computed once and
  memoised, and paths that can no longer end are dropped early.
- `tail_automaton`: the lazily built automaton that tells `fast_analysis` which paths can end.
- `fast_decoder`: the perceptron disambiguator (`PerceptronAmbiguityResolver`): feature ids and
  weights in numpy arrays, float32 sums in Zemberek's order, ties broken as Zemberek does.
- `perceptron_weights`: the minimal-perfect-hash weight look-up (`CompressedWeights.get_`) on
  numpy arrays over many features at once.
- `loading`: importing zemberek-python and building its analyser without changing logging.

How parity is checked (the unmodified zemberek-python is always the other side):
- `tests/morph/test_zemberek_fast_analysis.py`: the same analyses, in the same order, with the
  same morphemes and inflectional groups, for made-up and tricky words and every word type of
  real Turkish text (`../shared/data`), and the stock analyser left unchanged;
- `tests/morph/test_turkish_segmenter.py`: the weight look-up against `CompressedWeights.get_`,
  each trigram score against Zemberek's feature sums, the decoder's best path against
  `Decoder.best_path`, and whole-text segmentation against per-sentence
  `analyze_and_disambiguate`, in one process and in worker processes;
- `benchmarks/bench_turkish_segmentation.py`: the speed-up, with a count of differing lines
  (0) on the same text.
"""
