"""TurkishSegmenter: Zemberek's morphemes on the original characters, fast, exact (design.md §3)."""

import logging
import random
import time

import numpy as np
import pytest
from conftest import SHARED_DATA

from fairseq_struct.morph import turkish
from fairseq_struct.morph.forked_helpers import ForkedHelpers
from fairseq_struct.morph.segmentation_cache import SegmentationCache
from fairseq_struct.morph.turkish import (
    SegmentationStats,
    cache_fingerprint,
    segment_lines,
    shared_segmenter,
)
from fairseq_struct.morph.zemberek import fast_decoder as zemberek_fast_decoder
from fairseq_struct.morph.zemberek.fast_decoder import FastDecoder
from fairseq_struct.morph.zemberek.perceptron_weights import PerceptronWeights, StringTable
from fairseq_struct.pieces.markers import MORPHEME_BOUNDARY as B

# Real Turkish for the comparison with Zemberek's reference path; it is shared development data,
# not part of the repository, so the test that reads it skips when it is absent.
TATOEBA_TR = SHARED_DATA / "en-tr-tatoeba" / "tatoeba.tr"

pytestmark = pytest.mark.filterwarnings("ignore:notifyAll:DeprecationWarning")  # in zemberek


@pytest.fixture(scope="module")
def segmenter():
    pytest.importorskip("zemberek", reason="zemberek-python is needed for Turkish segmentation")
    # Building Zemberek takes about 10 s: once for the module (and for test_prepare, which
    # uses the same shared instance when run in the same session).
    return shared_segmenter()


def morphemes(segmented: str) -> list:
    return [word.split(B) for word in segmented.split(" ")]


def candidate_analyses(segmenter, line: str) -> list:
    """The distinct SingleAnalysis candidates of every token of `line`, as the decoder gets them."""
    return [
        segmenter._candidates_of(content, type_)
        for text in line.split(" ")
        for content, type_, _, _ in segmenter._tokenize(text)
    ]


def test_word_is_split_into_zemberek_morphemes(segmenter):
    assert segmenter.segment("göremediklerimizden") == B.join(
        ["gör", "eme", "dik", "ler", "imiz", "den"]
    )


def test_original_case_and_spelling_survive(segmenter):
    assert morphemes(segmenter.segment("Göremediklerimizden İstanbul'da yaşıyor.")) == [
        ["Gör", "eme", "dik", "ler", "imiz", "den"],
        ["İstanbul", "'da"],
        ["yaş", "ıyor."],
    ]
    assert morphemes(segmenter.segment("ÇOCUKLARIMIZ Iğdır'a gitti")) == [
        ["ÇOCUK", "LAR", "IMIZ"],
        ["Iğdır", "'a"],
        ["git", "ti"],
    ]
    # Zemberek analyses "kağıtları" and "emevîler'in": the original spelling is kept.
    assert segmenter.segment("kâğıtları") in (f"kâğıt{B}ları", f"kâğıt{B}lar{B}ı")
    assert segmenter.segment("Emevîler'in") == f"Emevîler{B}'in"


def test_apostrophe_opens_the_suffix(segmenter):
    assert segmenter.segment("Ali'ye") == f"Ali{B}'ye"
    assert segmenter.segment("1990'larda") == f"1990{B}'lar{B}da"
    assert segmenter.segment("A.B.D.'nin") == f"A.B.D.{B}'nin"


def test_punctuation_numbers_urls_and_foreign_words_stay_whole(segmenter):
    line = "2013 yılı, 3,5 kez www.example.com ... Washington'dır!"
    words = morphemes(segmenter.segment(line))
    assert words[0] == ["2013"]
    assert words[2:6] == [["3,5"], ["kez"], ["www.example.com"], ["..."]]
    assert words[6] == ["Washington'dır!"]


def test_token_stays_whole_when_the_surfaces_do_not_spell_it(segmenter):
    # A real analysis of another word: its morphemes cannot be cut out of "kitaplarda".
    analysis = segmenter.morphology.analyze("evlerde").analysis_results[0]
    assert [m.surface for m in analysis.morpheme_data_list if m.surface] == ["ev", "ler", "de"]
    assert segmenter._cuts("evlerde", analysis) == (2, 5)
    assert segmenter._cuts("kitaplarda", analysis) == ()


@pytest.mark.parametrize(
    "line",
    [
        "Evlerimizde ''güzel'' “alıntılar” var; ev’de   üç boşluk.",
        "  leading and trailing  ",
        "Tab\tiçeren satır ve NBSP\u00a0boşluğu",
        "😀 emoji北京 ünlü Âdemoğlu hâlâ meşgûl",
        "",
        "T.C.'nin Prof. Dr. ODTÜ'de %50'sini 12:30'da ödedi.",
    ],
)
def test_removing_the_marks_gives_the_line_back(segmenter, line):
    assert segmenter.segment(line).replace(B, "") == line


def test_a_token_zemberek_itself_fails_on_is_kept_whole(segmenter, caplog):
    line = "izledim 000000..... harika"  # real sentiment-corpus text
    with pytest.raises(TypeError):  # stock Zemberek's numeral analysis: None + str
        segmenter.morphology.analyze_and_disambiguate(line)
    # forget what an earlier test may have cached, so that the token is analysed here
    segmenter._chunks.pop("000000.....", None)
    for key in [key for key in segmenter._candidates if key[0].startswith("000000")]:
        del segmenter._candidates[key]
    with caplog.at_level(logging.WARNING, logger="fairseq_struct.morph.zemberek.fast_analysis"):
        segmented = segmenter.segment(line)
    assert segmented == f"izle{B}di{B}m 000000..... harika"
    assert "Zemberek cannot analyse '000000.'" in caplog.text


def test_input_with_a_boundary_mark_is_rejected(segmenter):
    with pytest.raises(ValueError, match="U\\+FFED"):
        segmenter.segment(f"ev{B}ler")
    with pytest.raises(ValueError, match="got a newline"):  # in a batch, after a good line
        segmenter.segment_many(["Gel!", "iki\nsatır"])


def test_segment_lines_keeps_order_with_two_workers(segmenter):
    lines = ["Kitaplarımızı okuduk.", "Ali'ye göre, evlerde kimse yok.", "Gel!"] * 20
    stats = SegmentationStats()
    assert segment_lines(lines, workers=2, stats=stats) == [segmenter.segment(x) for x in lines]
    assert stats.lines == len(lines)


def test_workers_give_the_output_of_one_process_and_of_zemberek(segmenter, monkeypatch):
    if not TATOEBA_TR.exists():
        pytest.skip(f"{TATOEBA_TR} is absent (shared development data, not part of the repo)")
    lines = TATOEBA_TR.read_text(encoding="utf-8").split("\n")[5000:5120]
    # several blocks: the chunks of each are analysed by the workers, then its lines segmented
    monkeypatch.setattr(turkish, "_BLOCK_LINES", 50)
    one = segment_lines(lines, workers=1)
    stats = SegmentationStats()
    assert segment_lines(lines, workers=2, stats=stats) == one
    assert one == [segmenter.segment_reference(line) for line in lines]
    assert (stats.lines, stats.tokens) == (len(lines), sum(segmenter._segment(x)[1] for x in lines))


def known_here(texts: list) -> list:
    time.sleep(0.2)  # long enough that this process and its helper both take batches
    return [text in turkish.shared_segmenter()._chunks for text in texts]


def test_workers_analyse_repeated_new_chunks_once_and_share_them(segmenter):
    word = "Çekoslovakyalılaştıramadıklarımızdan"
    numbers = [str(n) for n in range(1000, 1200)]  # 200 repeated chunks: several batches
    lines = [f"{word} mısınız?", f"Gel! Gel! {word} yapraklarıyla"] + [" ".join(numbers)] * 2
    analysed = turkish._analyse_in_worker([word])
    texts = [word, "Gel!", "yapraklarıyla", *numbers]
    for text in texts:
        segmenter._chunks.pop(text, None)
    with ForkedHelpers(2) as helpers:
        turkish._analyse_new_chunks(segmenter, lines, helpers)
        known = list(helpers.map(known_here, [texts] * 6))
    # equal to what this process would have made, whichever process analysed it
    assert segmenter._chunks[word] == analysed[0]
    # every process has every repeated chunk; a chunk met once is left to the process that
    # segments its line
    assert {by for by, _ in known} == {0, 1}
    assert all(flags == [True, True, False] + [True] * len(numbers) for _, flags in known)


def test_workers_refuse_a_line_with_a_boundary_mark(segmenter):
    with pytest.raises(ValueError, match="U\\+FFED"):
        segment_lines(["Gel!", f"ev{B}ler"], workers=2)


def test_without_fork_lines_are_segmented_in_this_process(segmenter, monkeypatch, caplog):
    # spawned workers would have another string hash seed, on which Zemberek's analyses depend
    monkeypatch.setattr(turkish.multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    lines = ["Kitaplarımızı okuduk.", "Gel!"]
    with caplog.at_level(logging.WARNING, logger="fairseq_struct.morph.turkish"):
        assert segment_lines(lines, workers=2) == [segmenter.segment(x) for x in lines]
    assert "cannot be forked" in caplog.text


def test_cached_trigram_scores_give_the_same_paths(segmenter, monkeypatch):
    lines = ["Halk hikayelerine göre kediler dokuz canlıdır.", "Yüzü yüze bakar mısın?"] * 3
    keys = [
        [list(map(segmenter._decoder.word_key, c)) for c in candidate_analyses(segmenter, x)]
        for x in lines
    ]
    fresh = FastDecoder(segmenter.morphology.ambiguity_resolver)
    cold = [fresh.best_path(sentence, len(sentence) - 1) for sentence in keys]
    assert fresh._steps  # kept across sentences
    assert [fresh.best_path(sentence, len(sentence) - 1) for sentence in keys] == cold
    # all sentences at once (their new steps scored together), cold and warm
    batched = FastDecoder(segmenter.morphology.ambiguity_resolver)
    for _ in range(2):
        assert batched.best_paths([(sentence, len(sentence) - 1) for sentence in keys]) == cold
    # a cache that overflows is emptied and refilled, with the same paths
    monkeypatch.setattr(zemberek_fast_decoder, "_MAX_STEP_ENTRIES", 5)
    small = FastDecoder(segmenter.morphology.ambiguity_resolver)
    assert [small.best_path(sentence, len(sentence) - 1) for sentence in keys] == cold
    assert len(small._steps) <= max(5, max(map(len, keys)) + 1)


def test_word_keys_are_zemberek_word_data(segmenter):
    word_data = type(segmenter.morphology.ambiguity_resolver).WordData.from_analysis
    line = "Kitaplaştırılamayanlardan İstanbul'da güzelleşmişti, hızlıca koşarak geldiler."
    analyses = [a for position in candidate_analyses(segmenter, line) for a in position]
    derived = [a for a in analyses if len(a.group_boundaries) > 1]
    assert derived and any(a.item.secondary_pos.name != "None_" for a in analyses)
    for analysis in analyses:
        data = word_data(analysis)
        assert segmenter._decoder.word_key(analysis) == (data.lemma, tuple(data.igs))


def test_a_batch_with_too_many_new_strings_is_halved(segmenter, monkeypatch):
    lines = ["Halk hikayelerine göre kediler.", "Yüzü yüze bakar mısın?", "Gel!", "Ben geldim."]
    keys = [
        [list(map(segmenter._decoder.word_key, c)) for c in candidate_analyses(segmenter, x)]
        for x in lines
    ]
    sentences = [(sentence, len(sentence) - 1) for sentence in keys]
    whole = FastDecoder(segmenter.morphology.ambiguity_resolver)
    expected = whole.best_paths(sentences)
    assert len(whole._strings) >= 60  # so that the small decoder below must split the batch
    # string ids are packed 21 bits apiece; here the table is "full" after a few sentences
    monkeypatch.setattr(zemberek_fast_decoder, "_MAX_STRINGS", 60)
    small = FastDecoder(segmenter.morphology.ambiguity_resolver)
    assert small.best_paths(sentences) == expected
    assert len(small._strings) < 60
    monkeypatch.setattr(zemberek_fast_decoder, "_MAX_STRINGS", 20)
    with pytest.raises(ValueError, match="over 2 million distinct lemmas"):
        FastDecoder(segmenter.morphology.ambiguity_resolver).best_paths(sentences[:1])


def test_weight_lookup_port_matches_zemberek(segmenter):
    from itertools import product

    resolver = segmenter.morphology.ambiguity_resolver.decoder
    model = resolver.model
    features = []  # Zemberek's own features of real trigrams
    for line in ["Bir kara tahta, siyah olmak zorunda değildir.", "Sandalyeye bir kedi oturdu."]:
        positions = candidate_analyses(segmenter, line)
        for trigram_candidates in zip(positions, positions[1:], positions[2:]):
            for trigram in product(*trigram_candidates):
                features += resolver.extractor.extract_from_trigram(list(trigram))
    rng = random.Random(1)
    made_up = ["".join(rng.choice("abcçğış:+-019ÇİŞ€漢") for _ in range(n)) for n in range(60)]
    features = list(dict.fromkeys(features)) + made_up
    expected = [model.get_(feature) for feature in features]
    weights = PerceptronWeights(model)
    assert weights.lookup(features).tolist() == expected
    assert sum(weight != 0 for weight in expected) > 20
    # spelled as rows of parts (cut at two places), the same weights
    table = StringTable()
    cuts = [sorted(rng.randint(0, len(feature)) for _ in range(2)) for feature in features]
    parts = np.array(
        [
            [table(feature[:i]), table(feature[i:j]), table(feature[j:])]
            for feature, (i, j) in zip(features, cuts)
        ]
    )
    assert weights.lookup_parts(table, parts).tolist() == expected


def test_trigram_scores_match_zemberek_feature_sums(segmenter):
    decoder = segmenter._decoder
    resolver = segmenter.morphology.ambiguity_resolver.decoder
    begin = type(segmenter.morphology.ambiguity_resolver).sentence_begin
    end = type(segmenter.morphology.ambiguity_resolver).sentence_end
    line = "Halk hikayelerine göre kediler dokuz canlıdır, yüzü yüze bakar mısın?"
    sentence = candidate_analyses(segmenter, line)
    analyses = [[begin], [begin], *sentence, [end]]
    words = [[decoder._word(decoder.word_key(a)) for a in position] for position in analyses]
    scores = decoder._trigram_scores(words)
    assert max(len(position) for position in sentence) > 2
    for step, trigram_scores in enumerate(scores):
        first, second, third = analyses[step : step + 3]
        assert trigram_scores.shape == (len(first), len(second), len(third))
        for index in np.ndindex(trigram_scores.shape):
            trigram = [first[index[0]], second[index[1]], third[index[2]]]
            expected = np.float32(0)  # Zemberek's Decoder.best_path, term by term
            for key, count in resolver.extractor.extract_from_trigram(trigram).items():
                expected += np.float32(resolver.model.get_(key) * np.float32(count))
            assert trigram_scores[index] == expected, (step, index)


def test_same_output_as_per_sentence_analyze_and_disambiguate(segmenter):
    # Real text, because the disambiguator only matters where real sentences are ambiguous.
    if not TATOEBA_TR.exists():
        pytest.skip(f"{TATOEBA_TR} is absent (shared development data, not part of the repo)")
    lines = TATOEBA_TR.read_text(encoding="utf-8").split("\n")[3000:3300]
    stats_before = SegmentationStats(**vars(segmenter.stats))
    fast = segmenter.segment_many(lines)  # as segment_lines does: the decoder batched
    reference = [segmenter.segment_reference(line) for line in lines]
    assert [i for i, (a, b) in enumerate(zip(fast, reference)) if a != b] == []
    disambiguated = segmenter.stats.disambiguated_lines - stats_before.disambiguated_lines
    # both paths were exercised: lines the disambiguator could change, and lines it could not
    assert 0 < disambiguated < len(lines)
    assert [segmenter.segment(line) for line in lines[:50]] == fast[:50]  # line by line


def test_chunks_skip_the_lexer_only_where_it_gives_the_same_tokens(segmenter):
    # The fast paths are only exact if Zemberek's lexer gives the tokens they assume: check
    # every distinct chunk of the shared Turkish corpora (and tricky ones) against it.
    chunks = {"dil", "Mi", "xD", "Iv", "İstanbul", "âlem", "Âdem", "kâr", "q", "I", "XIV", "MC"}
    chunks |= {"İstanbul'da", "O'Neil", "Ali'nin'ki", "ab'c", "ali'", "Iv'de", "IV'te", "x'y"}
    chunks |= {"geldi,", "geldi.", "Geldi!", "vb.", "Dr.", "dr.", "a.", "I.", "gel...", "ne?!"}
    for path in (TATOEBA_TR, SHARED_DATA / "tr-raw" / "tr_wikiner_train_sentences.txt"):
        if path.exists():
            chunks.update(path.read_text(encoding="utf-8").split())
    fast_paths = (turkish._PLAIN_WORD, turkish._APOSTROPHE_WORD, turkish._WORD_AND_PUNCTUATION)
    used = [0, 0, 0]
    for chunk in sorted(chunks):
        tokens = list(segmenter._tokenize(chunk))
        assert list(segmenter._chunk_tokens(chunk)) == tokens, chunk
        for index, pattern in enumerate(fast_paths):
            used[index] += bool(pattern.fullmatch(chunk))
    # every path was exercised, and the lexer too (also without ../shared)
    assert min(used) > 0 and sum(used) < len(chunks)


def test_a_second_run_takes_every_line_from_the_persistent_cache(segmenter, tmp_path):
    lines = ["Kitaplarımızı okuduk.", "Ali'ye göre, evlerde kimse yok.", "Gel!", "Gel!"]
    expected = [segmenter.segment(line) for line in lines]
    path = tmp_path / "segmentation.sqlite"
    for run, cached in ((1, 0), (2, len(lines))):
        stats = SegmentationStats()
        with SegmentationCache(path, cache_fingerprint()) as cache:
            assert segment_lines(lines, stats=stats, cache=cache) == expected, run
        assert (stats.lines, stats.cached_lines) == (len(lines), cached), run
    assert stats.tokens == sum(segmenter._segment(line)[1] for line in lines)


def test_cache_fingerprint_names_the_analyser_and_is_stable():
    pytest.importorskip("zemberek")
    fingerprint = cache_fingerprint()
    assert fingerprint.startswith("zemberek-0.2.3-rules-")
    assert cache_fingerprint() == fingerprint


def test_long_runs_log_progress_with_rate_and_eta(segmenter, caplog):
    lines = ["Kitaplarımızı okuduk.", "Gel!"]
    with caplog.at_level(logging.INFO, logger="fairseq_struct.morph.turkish"):
        segment_lines(lines, log_every_s=0.0)
    assert "segmented 2/2 lines (0 from the cache)" in caplog.text
    assert "tokens/s, ETA 00:00:00" in caplog.text


def test_decoder_chooses_zemberek_best_path(segmenter):
    from zemberek.morphology.analysis.word_analysis import WordAnalysis

    if not TATOEBA_TR.exists():
        pytest.skip(f"{TATOEBA_TR} is absent (shared development data, not part of the repo)")
    resolver = segmenter.morphology.ambiguity_resolver.decoder
    for line in TATOEBA_TR.read_text(encoding="utf-8").split("\n")[:150]:
        sentence = candidate_analyses(segmenter, line)
        expected = resolver.best_path([WordAnalysis("", c) for c in sentence]).best_parse
        keys = [list(map(segmenter._decoder.word_key, c)) for c in sentence]
        # deciding every token: no early stop, the whole path must be Zemberek's
        chosen = segmenter._decoder.best_path(keys, len(sentence) - 1)
        assert [c[i] for c, i in zip(sentence, chosen)] == expected, line


def test_the_chunk_cache_is_emptied_before_it_outgrows_its_bound(segmenter, monkeypatch):
    lines = ["Kitaplarımızı okuduk.", "Gel! Gel!"]
    expected = [segmenter.segment(line) for line in lines]
    monkeypatch.setattr(turkish, "_MAX_CACHE_ENTRIES", 3)
    segmenter._chunks.clear()
    assert segmenter.segment_many(lines) == expected  # three chunks: at the bound, kept
    assert set(segmenter._chunks) == {"Kitaplarımızı", "okuduk.", "Gel!"}
    segmenter._chunk("Ev")  # a fourth would go over: emptied first
    assert set(segmenter._chunks) == {"Ev"}
    segmenter._remember([segmenter._analyse_chunk(text) for text in ("a", "b", "c")])
    assert set(segmenter._chunks) == {"a", "b", "c"}
