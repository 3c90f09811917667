"""Model inputs of the fine-tuning tasks: labels on first units, windows, QA spans."""

from fairseq.data import Dictionary

from fairseq_struct.downstream.features import (
    IGNORED_LABEL,
    CutContext,
    CutCounts,
    answer_units,
    qa_features,
    sentence_item,
    token_windows,
)


def dictionary_of(*symbols: str) -> Dictionary:
    dictionary = Dictionary()
    for symbol in symbols:
        dictionary.add_symbol(symbol)
    return dictionary


def test_labels_land_on_the_first_unit_of_each_word():
    dictionary = dictionary_of("▁Ali", "▁Ank", "ara", "'", "da", "▁.")
    units = [["▁Ali"], ["▁Ank", "ara", "'", "da"], ["▁."]]
    counts = CutCounts()
    (window,) = token_windows(0, units, ["B-PER", "B-LOC", "O"], dictionary, 64, counts)
    assert window.tokens == [dictionary.bos()] + [
        dictionary.index(u) for u in ["▁Ali", "▁Ank", "ara", "'", "da", "▁."]
    ] + [dictionary.eos()]
    assert window.labels == [
        IGNORED_LABEL,
        "B-PER",
        "B-LOC",
        IGNORED_LABEL,
        IGNORED_LABEL,
        IGNORED_LABEL,
        "O",
        IGNORED_LABEL,
    ]
    assert (window.first_word, window.words) == (0, 3)
    assert counts.split_sentences == 0


def test_a_long_sentence_is_split_into_windows_of_whole_words():
    dictionary = dictionary_of("a", "b", "c")
    units = [["a", "b"], ["c"], ["a", "b", "c"], ["a"]]
    counts = CutCounts()
    windows = token_windows(3, units, ["X", "Y", "Z", "W"], dictionary, 6, counts)
    # 4 units fit between <s> and </s>: [a b][c] | [a b c][a]
    assert [(w.first_word, w.words) for w in windows] == [(0, 2), (2, 2)]
    assert all(len(w.tokens) <= 6 for w in windows)
    assert [label for w in windows for label in w.labels if label != IGNORED_LABEL] == list("XYZW")
    assert (counts.split_sentences, counts.extra_windows) == (1, 1)


def test_a_word_longer_than_a_window_keeps_its_first_units_and_is_counted():
    dictionary = dictionary_of("a")
    counts = CutCounts()
    (window,) = token_windows(0, [["a"] * 10], ["X"], dictionary, 5, counts)
    assert len(window.tokens) == 5 and window.labels[1] == "X"
    assert counts.truncated_words == 1


def test_sentence_items_fit_the_encoder_with_the_init_token():
    dictionary = dictionary_of("a", "b")
    counts = CutCounts()
    item = sentence_item([["a", "b"], ["a", "b"]], dictionary, 4, counts)
    assert item == [dictionary.index("a"), dictionary.index("b"), dictionary.eos()]
    assert counts.truncated_sequences == 1
    counts = CutCounts()
    assert sentence_item([["zzz"]], dictionary, 8, counts) == [dictionary.unk(), dictionary.eos()]
    assert counts.unknown_units == 1


def test_answer_units_are_those_overlapping_the_answer_characters():
    spans = [(0, 4), (4, 6), (7, 12), (12, 14)]
    assert answer_units(spans, 4, 12) == (1, 2)
    assert answer_units(spans, 5, 8) == (1, 2)  # partial overlaps at both ends
    assert answer_units(spans, 6, 7) == (-1, -1)  # only the space


def test_qa_windows_move_by_the_stride_and_point_at_the_answer_or_at_bos():
    dictionary = dictionary_of("q", "c")
    context = CutContext([dictionary.index("c")] * 10, [(i, i + 1) for i in range(10)])
    counts = CutCounts()
    features = qa_features(
        "7", [dictionary.index("q")], context, (6, 8), dictionary, 9, 3, 64, counts
    )
    # <s> q </s> = 3 tokens, then 5 context units and </s>: windows start at units 0, 3, 6
    assert [f.unit_spans[0][0] for f in features] == [0, 3, 6]
    assert [(f.start, f.end) for f in features] == [(0, 0), (6, 7), (3, 4)]
    assert all(len(f.tokens) <= 9 for f in features)
    assert features[1].tokens[3 + 3] == dictionary.index("c")
    assert counts.extra_windows == 2
