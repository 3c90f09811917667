"""FastRuleBasedAnalyzer gives exactly Zemberek's analyses, type by type (design.md §3)."""

import pytest
from conftest import SHARED_DATA

from fairseq_struct.morph.turkish import shared_segmenter

TATOEBA_TR = SHARED_DATA / "en-tr-tatoeba" / "tatoeba.tr"
TR_RAW = SHARED_DATA / "tr-raw" / "tr_wikiner_train_sentences.txt"

pytestmark = pytest.mark.filterwarnings("ignore:notifyAll:DeprecationWarning")  # in zemberek


@pytest.fixture(scope="module")
def morphologies():
    pytest.importorskip("zemberek", reason="zemberek-python is needed for Turkish segmentation")
    from fairseq_struct.morph.zemberek.fast_analysis import fast_morphology

    stock = shared_segmenter().morphology
    # A fresh fast analyser: its memoised steps start empty, as on a cold run.
    return stock, fast_morphology(stock)


def word_types(morphology, lines):
    from zemberek.core.text import TextUtil

    types = {}
    for line in lines:
        for token in morphology.tokenizer.tokenize(TextUtil.normalize_quotes_hyphens(line)):
            types[token.content, token.type_] = token
    return list(types.values())


def analyses_signature(analyses) -> list:
    """What two analysis lists must share to be the same (order, items, morphemes, groups)."""
    return [
        (
            analysis.item.id_,
            analysis.item.lemma,
            analysis.item.primary_pos,
            analysis.item.secondary_pos,
            tuple((data.morpheme.id_, data.surface) for data in analysis.morpheme_data_list),
            tuple(int(boundary) for boundary in analysis.group_boundaries),
            str(analysis),
        )
        for analysis in analyses
    ]


def assert_same_analyses(stock, fast, tokens):
    differing = []
    for token in tokens:
        expected = stock.analyze_without_cache(token=token).analysis_results
        got = fast.analyze_without_cache(token=token).analysis_results
        if analyses_signature(got) != analyses_signature(expected):
            differing.append(token.content)
    assert differing == []


def test_made_up_and_tricky_words(morphologies):
    stock, fast = morphologies
    lines = [
        "Göremediklerimizden İstanbul'da kâğıtları Emevîler'in okuyabileceklermiş gibi.",
        "T.C.'nin Prof. Dr. ODTÜ'de %50'sini 12:30'da 1990'larda III. Selim'e ödedi!",
        "www.example.com @ali #etiket ali@example.com Washington'dır xyzqw aaaaaaaaaaaaaaaaaaaaa",
        "Çekoslovakyalılaştıramadıklarımızdanmışsınızcasına ve ilişkilendirilemeyebileceklerden",
    ]
    tokens = word_types(stock, lines)
    assert len(tokens) > 25
    assert_same_analyses(stock, fast, tokens)


def test_every_word_type_of_real_text(morphologies):
    stock, fast = morphologies
    if not TATOEBA_TR.exists() or not TR_RAW.exists():
        pytest.skip(
            f"{TATOEBA_TR} or {TR_RAW} is absent (shared development data, not in the repo)"
        )
    lines = TATOEBA_TR.read_text(encoding="utf-8").split("\n")
    lines += TR_RAW.read_text(encoding="utf-8").split("\n")[:500]
    tokens = word_types(stock, lines)
    assert len(tokens) > 18_000
    assert_same_analyses(stock, fast, tokens)


def test_the_stock_analyser_is_left_alone(morphologies):
    from fairseq_struct.morph.zemberek.fast_analysis import FastRuleBasedAnalyzer

    stock, fast = morphologies
    assert not isinstance(stock.analyzer, FastRuleBasedAnalyzer)
    assert stock.unidentified_token_analyzer.analyzer is stock.analyzer
    assert fast.unidentified_token_analyzer.analyzer is fast.analyzer


def test_tail_automaton_rebuilt_when_full_gives_the_same_analyses(morphologies, monkeypatch):
    from fairseq_struct.morph.zemberek import tail_automaton as zemberek_tail_automaton
    from fairseq_struct.morph.zemberek.fast_analysis import fast_morphology

    stock, _ = morphologies
    monkeypatch.setattr(zemberek_tail_automaton, "_MAX_STATES", 20)
    small = fast_morphology(stock)  # its automaton is emptied every few words
    lines = ["Göremediklerimizden kitaplarımızı okuyabileceklermiş.", "Evlerdekilerden mi?"]
    tokens = word_types(stock, lines)
    assert_same_analyses(stock, small, tokens)
    assert len(small.analyzer._can_end.__self__._configs) <= 20 + max(map(len, lines))


def test_paths_that_cannot_end_are_told_apart(morphologies):
    _, fast = morphologies
    analyzer = fast.analyzer
    (stem,) = [s for s in analyzer._stems("evlerde") if s.surface == "ev"]
    attributes = analyzer._intern(frozenset(stem.phonetic_attributes))
    can_end = analyzer._can_end
    assert can_end(stem.to, attributes, "lerde")  # ev+ler+de
    assert can_end(stem.to, attributes, "")  # ev
    assert not can_end(stem.to, attributes, "lerdeqq")
    assert not can_end(stem.to, attributes, "larda")  # back vowels after a front one
