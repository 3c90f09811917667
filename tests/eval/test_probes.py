"""Polatbilek's probes: the probe file format, the vector arithmetic, word vectors, the CLI."""

import json
import math
import re
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
import torch
from fairseq.data import Dictionary

import fairseq_struct.plugin  # noqa: F401  (registers the models)
from fairseq_struct.eval.probes import main as probes_main
from fairseq_struct.eval.probes.format import (
    AnalogyProbe,
    ContextualityProbe,
    ProbeError,
    QueryWord,
    WordAt,
    WugProbe,
    parse_probes,
)
from fairseq_struct.eval.probes.runner import (
    ContextEncoder,
    EncodedContext,
    run_analogy,
    run_contextuality,
    run_wug,
)
from fairseq_struct.eval.probes.statistics import analogy_query, answer_analogy, outlier_p_value
from fairseq_struct.eval.probes.words import context_words, replace_word, turkish_lower
from fairseq_struct.morph.units import unit_spans
from fairseq_struct.testing.build_from_arch import build_model_from_arch

REPO = Path(__file__).resolve().parents[2]
PROBE_FILES = REPO / "fairseq_struct" / "eval"

EVERY_KIND = """\
# a comment
[analogy capital]
context: Türkiye'nin başkenti
  Ankara'dır.
context: Fransa'nın başkenti Paris'tir.
query: ankara - türkiye@1 + fransa = paris
compare: 2

[contextuality dil]
word: dil
target: Dil bir organdır.
different: Dil insanlar arasında anlaşmayı sağlar.
  # an indented comment
same: Dil tat alır.
same: Dil, ağızdadır.

[wug barış]
word: barış
replacement: vug
context: Barış iyidir.
replaced: Vug iyidir, gerçekten.
context: BARIŞ ve barış.
"""


# ------------------------------------------------------------------------------ the format


def test_parser_reads_every_block_kind():
    analogy, contextuality, wug = parse_probes(EVERY_KIND, "p.txt")
    assert isinstance(analogy, AnalogyProbe) and analogy.name == "capital"
    assert analogy.contexts == [
        "Türkiye'nin başkenti Ankara'dır.",  # the indented line continues the value
        "Fransa'nın başkenti Paris'tir.",
    ]
    assert (analogy.a, analogy.b, analogy.c) == (
        QueryWord("ankara"),
        QueryWord("türkiye", 1),
        QueryWord("fransa"),
    )
    assert analogy.expected == "paris" and analogy.compare == 2
    assert analogy.where == "p.txt:6"
    assert isinstance(contextuality, ContextualityProbe)
    assert contextuality.word == "dil" and contextuality.target == "Dil bir organdır."
    assert contextuality.different == ["Dil insanlar arasında anlaşmayı sağlar."]
    assert contextuality.same == ["Dil tat alır.", "Dil, ağızdadır."]
    assert isinstance(wug, WugProbe) and wug.replacement == "vug"
    assert wug.contexts == ["Barış iyidir.", "BARIŞ ve barış."]
    assert wug.replaced == ["Vug iyidir, gerçekten.", None]
    assert wug.replaced_contexts() == ["Vug iyidir, gerçekten.", "VUG ve vug."]


def test_optional_parts_take_their_defaults():
    (analogy,) = parse_probes(
        "[analogy a]\ncontext: x y z\ncontext: p q r s\nquery: x - y + z\n", "p.txt"
    )
    assert analogy.expected is None and analogy.compare is None and analogy.compare_index == 1
    (wug,) = parse_probes("[wug w]\nword: ev\ncontext: Ev büyük.\n", "p.txt")
    assert wug.replacement == "wug" and wug.replaced_contexts() == ["Wug büyük."]


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("context: a\n", 1, "block header"),
        ("[analogy a]\n[sentiment b]\n", 2, "unknown probe kind 'sentiment'"),
        ("[analogy a\n", 1, "block header"),
        ("[analogy a]\ncontext: x y z\nword: x\n", 3, "unknown key 'word'"),
        ("[analogy a]\ncontext: x y z\njust text\n", 3, "expected 'key: value'"),
        ("[analogy a]\ncontext: x y z\nquery: x + y - z\n", 3, "a - b + c"),
        ("[analogy a]\ncontext: x y z\nquery: x@2 - y + z\n", 3, "names context 2"),
        ("[analogy a]\ncontext: x y z\nquery: x - y + z = y\n", 3, "is a query word"),
        ("[analogy a]\ncontext: x y z\nquery: x - y + z\ncompare: 3\n", 4, "from 1 to 1"),
        ("[analogy a]\ncontext: x y z\n", 1, "no query: line"),
        ("[analogy a]\ncontext: x y z\nquery: x - y + z\nquery: x - y + z\n", 4, "a second"),
        ("[analogy a]\ncontext:\n", 2, "empty context:"),
        ("[contextuality c]\nword: x\ntarget: x y\n", 1, "different: or same:"),
        ("[contextuality c]\nword: x y\ntarget: x y\nsame: x\n", 2, "one word"),
        ("[wug w]\nword: x\nreplaced: wug\n", 3, "must follow its own context"),
        ("[wug w]\nword: x\ncontext: x\nreplaced: a\nreplaced: b\n", 5, "own context"),
        ("[wug w]\nword: x\n", 1, "no context: line"),
        ("[wug w]\nword: x\ncontext: x\n\n[wug w]\nword: x\ncontext: x\n", 5, "a second [wug w]"),
    ],
)
def test_format_errors_name_the_file_and_line(text, line, message):
    with pytest.raises(ProbeError) as error:
        parse_probes(text, "probes.txt")
    assert str(error.value).startswith(f"probes.txt:{line}: ")
    assert message in str(error.value)


@pytest.mark.parametrize(
    "text, line, word",
    [
        ("[analogy cap]\ncontext: Ankara büyük.\nquery: ankara - türkiye + x\n", 3, "türkiye"),
        ("[analogy cap]\ncontext: a b c\ncontext: d\nquery: a - b + c = e\n", 4, "e"),
        ("[analogy cap]\ncontext: a b c\ncontext: d\nquery: a@2 - b + c\n", 4, "a"),
        ("[contextuality dil]\nword: dil\ntarget: Dil.\nsame: Diller.\n", 2, "dil"),
        ("[wug barış]\nword: barış\ncontext: Barışta.\n", 2, "barış"),
        ("[wug barış]\nword: barış\ncontext: Barış.\nreplaced: Barış.\n", 2, "wug"),
    ],
)
def test_a_word_missing_from_its_context_names_the_probe_and_the_word(text, line, word):
    with pytest.raises(ProbeError) as error:
        parse_probes(text, "probes.txt")
    message = str(error.value)
    assert message.startswith(f"probes.txt:{line}: ")
    assert re.search(r"(analogy|contextuality|wug) probe '\w+'", message)
    assert f"the word {word!r} is not in" in message


def test_shipped_probe_files_parse():
    thesis = parse_probes((PROBE_FILES / "probes_tr.txt").read_text("utf-8"), "probes_tr.txt")
    names = {(probe.kind, probe.name) for probe in thesis}
    for needed in [("analogy", n) for n in ("gender", "capital", "plural")] + [
        ("contextuality", "dil"),
        ("contextuality", "sol"),
        ("contextuality", "yüz"),
        ("wug", "barış"),
        ("wug", "savaş"),
        ("wug", "dünya"),
    ]:
        assert needed in names
    demo = (PROBE_FILES / "probes_demo_tr.txt").read_text("utf-8")
    assert {probe.kind for probe in parse_probes(demo, "demo")} == {
        "analogy",
        "contextuality",
        "wug",
    }


# ------------------------------------------------------------------------------- the words


def test_turkish_lower_casing_keeps_dotted_and_dotless_i_apart():
    assert turkish_lower("İSTANBUL") == "istanbul"
    assert turkish_lower("IRMAK") == "ırmak" != "irmak"
    assert turkish_lower("Işık") == "ışık"


def test_context_words_leave_out_punctuation_and_proper_noun_suffixes():
    text = "Türkiye'nin başkenti Ankara’dır. (81 il) ||| «Paris»,"
    words = context_words(text)
    assert [word.form for word in words] == ["Türkiye", "başkenti", "Ankara", "81", "il", "Paris"]
    assert all(text[word.start : word.end] == word.form for word in words)


def test_replace_word_keeps_the_case_and_the_suffix():
    text = "Barış, BARIŞ ve barış'a; barışık kalır."
    assert replace_word(text, "barış", "wug") == "Wug, WUG ve wug'a; barışık kalır."


# ------------------------------------------------------------------- the vector arithmetic


def test_analogy_query_is_a_minus_b_plus_c():
    a, b, c = torch.tensor([5.0, 1.0]), torch.tensor([2.0, 3.0]), torch.tensor([0.5, 7.0])
    assert torch.equal(analogy_query(a, b, c), torch.tensor([3.5, 5.0]))


def _at_similarity(query: torch.Tensor, similarity: float) -> torch.Tensor:
    """A vector whose cosine similarity with `query` (orthogonal to e4) is exactly `similarity`."""
    unit = query / query.norm()
    return similarity * unit + math.sqrt(1 - similarity**2) * torch.tensor([0.0, 0.0, 0.0, 1.0])


def test_answer_is_the_most_similar_context_word_with_the_query_words_excluded():
    query = analogy_query(
        torch.tensor([1.0, 0.0, 0.0, 0.0]),
        torch.tensor([0.0, 1.0, 0.0, 0.0]),
        torch.tensor([0.0, 0.0, 1.0, 0.0]),
    )
    candidates = [
        ("Kral", query.clone()),  # a query word: similarity 1, never the answer
        ("İyi", _at_similarity(query, 0.5)),
        ("ILIK", query * 2),  # "ılık" once lower-cased the Turkish way: a query word too
        ("ırmak", _at_similarity(query, 0.9)),  # the query's "IRMAK"
        ("prenses", _at_similarity(query, 0.8)),
        ("kraliçe", _at_similarity(query, -0.2)),
        ("ve", _at_similarity(query, 0.1)),
    ]
    answer = answer_analogy(query, candidates, ["kral", "ılık", "IRMAK"])
    assert answer.word == "prenses"
    assert answer.similarity == pytest.approx(0.8, abs=1e-6)
    assert answer.compared == 4
    assert [word for word, _ in answer.ranking] == ["prenses", "İyi", "ve", "kraliçe"]
    assert [s for _, s in answer.ranking] == pytest.approx([0.8, 0.5, 0.1, -0.2], abs=1e-6)
    # t = (0.8 - mean) / (sd * sqrt(1 + 1/3)) = 1.64399 with 2 degrees of freedom
    assert answer.p_value == pytest.approx(0.120951, abs=1e-5)


def test_p_value_needs_two_other_words_that_differ():
    assert outlier_p_value(0.9, [0.1]) is None
    assert outlier_p_value(0.9, [0.1, 0.1, 0.1]) is None
    assert outlier_p_value(0.9, [0.1, 0.2, 0.3]) < outlier_p_value(0.4, [0.1, 0.2, 0.3])


class StubEncoder:
    """Hand-made word vectors: by (context, lower-cased form), else by form."""

    def __init__(self, vectors: Dict, dim: int = 4) -> None:
        self.vectors = vectors
        self.dim = dim

    def encode(self, text: str) -> EncodedContext:
        words = context_words(text)
        vectors = []
        for word in words:
            form = turkish_lower(word.form)
            vectors.append(self.vectors.get((text, form), self.vectors.get(form)))
        return EncodedContext(
            words, [[w.form] for w in words], [[False] for _ in words], torch.stack(vectors)
        )

    def vector(self, occurrence) -> torch.Tensor:
        return self.encode(occurrence.text).vectors[occurrence.index]


def test_analogy_takes_words_from_their_contexts_and_answers_from_the_compared_one():
    e = torch.eye(4)
    first = "kral erkek hedef"
    second = "kraliçe kadın prens x"
    third = "prenses y prens"
    vectors = {
        "kral": e[0] + e[1],
        "kadın": e[3],
        "erkek": e[1],
        (second, "prens"): e[2],  # prens@2
        (third, "prens"): e[0] + e[2] + 0.1 * e[1],  # nearer than prenses, but a query word
        "hedef": e[0] + e[2],  # exactly the query, but not in the compared context
        "kraliçe": e[0],
        "x": -e[0],
        "prenses": e[0] + e[2] + 0.5 * e[3],
        "y": e[2],
    }
    (probe,) = parse_probes(
        f"[analogy g]\ncontext: {first}\ncontext: {second}\ncontext: {third}\n"
        "query: kral - erkek + prens@2 = prenses\n",
        "p.txt",
    )
    result = run_analogy(probe, StubEncoder(vectors), top=5)
    query = e[0] + e[2]
    assert result["answer"] == "prenses" and result["correct"] is True
    assert result["similarity"] == pytest.approx(2 / math.sqrt(2 * 2.25), abs=1e-6)
    assert result["compared_words"] == 2  # prenses, y: "prens" is a query word
    assert result["top"][1]["word"] == "y"
    assert result["top"][1]["similarity"] == pytest.approx(float(query @ e[2]) / math.sqrt(2))


def test_contextuality_compares_the_target_with_every_other_context():
    target, other, control = "Dil konuşur.", "Dil tadar.", "Dil, anlaşır."
    vectors = {
        (target, "dil"): torch.tensor([1.0, 0.0]),
        (other, "dil"): torch.tensor([0.0, 1.0]),
        (control, "dil"): torch.tensor([3.0, 4.0]),
        "konuşur": torch.zeros(2),
        "tadar": torch.zeros(2),
        "anlaşır": torch.zeros(2),
    }
    (probe,) = parse_probes(
        f"[contextuality dil]\nword: dil\ntarget: {target}\ndifferent: {other}\nsame: {control}\n",
        "p.txt",
    )
    rows = run_contextuality(probe, StubEncoder(vectors))
    assert [(r["compared"], r["sense"]) for r in rows] == [
        ("dil (different 1)", "different"),
        ("dil (same 1)", "same"),
    ]
    assert [r["similarity"] for r in rows] == pytest.approx([0.0, 0.6])


def test_wug_compares_from_the_word_and_from_wug_of_context_1():
    one, two = "Barış iyi.", "Barış güzel."
    wug_one, wug_two = "Wug iyi.", "Wug güzel."
    vectors = {
        (one, "barış"): torch.tensor([1.0, 0.0]),
        (wug_one, "wug"): torch.tensor([0.0, 1.0]),
        (two, "barış"): torch.tensor([1.0, 1.0]),
        (wug_two, "wug"): torch.tensor([-1.0, 0.0]),
        "iyi": torch.ones(2),
        "güzel": torch.ones(2),
    }
    (probe,) = parse_probes(f"[wug barış]\nword: barış\ncontext: {one}\ncontext: {two}\n", "p")
    rows = run_wug(probe, StubEncoder(vectors), top=3)
    pairs = [(r["from"], r["to"], round(r["similarity"], 6)) for r in rows]
    half = round(1 / math.sqrt(2), 6)
    assert pairs == [
        ("barış (context 1)", "wug (context 1)", 0.0),  # Table 5.7
        ("barış (context 1)", "barış (context 2)", half),
        ("barış (context 1)", "wug (context 2)", -1.0),
        ("wug (context 1)", "barış (context 1)", 0.0),  # Table 5.8
        ("wug (context 1)", "barış (context 2)", half),
        ("wug (context 1)", "wug (context 2)", 0.0),
    ]


# ----------------------------------------------------------- word vectors of a real encoder


class ChunkCutter:
    """Cuts a whitespace word into pieces of two characters (the first marked ▁), like
    SentencePiece would, with a trailing punctuation mark a piece of its own."""

    def cut_text(self, text: str) -> Tuple[List[List[str]], List[Tuple[int, int]]]:
        units, spans = [], []
        for match in re.finditer(r"\S+", text):
            word = match.group()
            body, tail = (word[:-1], [word[-1]]) if word[-1] in ".," else (word, [])
            pieces = [body[i : i + 2] for i in range(0, len(body), 2)] + tail
            pieces[0] = "\u2581" + pieces[0]
            units.append(pieces)
            spans += [(match.start() + a, match.start() + b) for a, b in unit_spans(word, pieces)]
        return units, spans


class WordCutter:
    def cut_text(self, text: str):
        units = [[match.group()] for match in re.finditer(r"\S+", text)]
        spans = [match.span() for match in re.finditer(r"\S+", text)]
        return units, spans


def _dictionary(symbols) -> Dictionary:
    dictionary = Dictionary()
    for symbol in symbols:
        dictionary.add_symbol(symbol)
    dictionary.add_symbol("<mask>")
    return dictionary


@pytest.mark.parametrize("layer, state", [(-1, None), (2, None), (0, 0), (1, 1), (-2, 1)])
def test_word_vector_is_the_mean_of_its_units_outputs(layer, state):
    text = "abcd ef, gh."
    dictionary = _dictionary(["\u2581ab", "cd", "\u2581ef", ",", "\u2581gh", "."])
    model = build_model_from_arch("bert2d_tiny", dictionary, seed=0).eval()
    encoder = ContextEncoder(model, dictionary, ChunkCutter(), layer=layer)
    encoded = encoder.encode(text)
    assert [w.form for w in encoded.words] == ["abcd", "ef", "gh"]
    assert encoded.units == [["\u2581ab", "cd"], ["\u2581ef"], ["\u2581gh"]]

    ids = [dictionary.index(s) for s in ["\u2581ab", "cd", "\u2581ef", ",", "\u2581gh", "."]]
    tokens = torch.tensor([[dictionary.bos()] + ids + [dictionary.eos()]])
    with torch.no_grad():
        features, extra = model(tokens, features_only=True, return_all_hiddens=True)
    hidden = features[0] if state is None else extra["inner_states"][state][:, 0]
    expected = torch.stack([hidden[[1, 2]].mean(dim=0), hidden[3], hidden[5]])
    torch.testing.assert_close(encoded.vectors, expected)
    assert not torch.allclose(encoded.vectors[0], hidden[1])  # a mean, not the first unit


def test_layer_out_of_range_is_refused():
    dictionary = _dictionary(["\u2581ab"])
    model = build_model_from_arch("bert2d_tiny", dictionary, seed=0)
    with pytest.raises(ValueError, match="layer 3"):
        ContextEncoder(model, dictionary, ChunkCutter(), layer=3)


def test_bert_elmo_embeds_a_word_outside_its_dictionary_from_characters():
    words = ["Kedi", "bahçede", "uyudu", "."]
    dictionary = _dictionary(words)
    model = build_model_from_arch("bert_elmo_tiny", dictionary, seed=0, output_vocab_size=6)
    text = "Wug bahçede uyudu ."
    vector = ContextEncoder(model, dictionary, WordCutter()).encode(text).vectors[0]

    # The same model with "Wug" in its dictionary reads it as a dictionary word.
    bigger = _dictionary(words + ["Wug"])
    twin = build_model_from_arch("bert_elmo_tiny", bigger, seed=1, output_vocab_size=6).eval()
    twin.load_state_dict(model.state_dict())
    ids = [bigger.index(w) for w in text.split()]
    tokens = torch.tensor([[bigger.bos()] + ids + [bigger.eos()]])
    with torch.no_grad():
        features, _ = twin(tokens, features_only=True)
    torch.testing.assert_close(vector, features[0, 1], atol=1e-5, rtol=1e-5)

    encoder = ContextEncoder(model, dictionary, WordCutter())
    occurrence = WordAt("Wug", text, 0)
    assert "embedded from characters" in encoder.units_note(occurrence)[1]
    rest = [dictionary.index(w) for w in text.split()[1:]]
    unknown = torch.tensor([[dictionary.bos(), dictionary.unk()] + rest + [dictionary.eos()]])
    with torch.no_grad():
        as_unk, _ = model(unknown, features_only=True)
    assert not torch.allclose(vector, as_unk[0, 1], atol=1e-3)


# ------------------------------------------------------------------------------- the CLI


def test_cli_reports_a_missing_word_with_file_and_line(tmp_path, capsys):
    probe_file = tmp_path / "p.txt"
    probe_file.write_text("[contextuality yüz]\nword: yüz\ntarget: Yüzme.\nsame: Yüz.\n", "utf8")
    code = probes_main(["none.pt", "--data", str(tmp_path), "--probes", str(probe_file)])
    assert code == 1
    error = capsys.readouterr().err
    assert f"{probe_file}:2: contextuality probe 'yüz': the word 'yüz' is not in target" in error


DEMO_RUNS = [("bert_elmo", "bin-words"), ("bert2d", "bin-pieces")]


@pytest.mark.parametrize("model, data", DEMO_RUNS)
def test_cli_on_the_demo_checkpoints(model, data, demo_mlm_run, tmp_path, capsys):
    """The session's masked-LM demo models (conftest's `demo_mlm_run`, scripts/demo-mlm.sh)."""
    demo = demo_mlm_run / "work"
    checkpoint = demo / f"checkpoints-{model}" / "checkpoint_best.pt"
    out = tmp_path / "probes.json"
    demo_probes = PROBE_FILES / "probes_demo_tr.txt"
    argv = [str(checkpoint), "--data", str(demo / data), "--probes", str(demo_probes)]
    assert probes_main(argv + ["--json", str(out)]) == 0
    printed = capsys.readouterr().out
    for header in ("analogy", "contextuality", "wug", "probe words", "one-sided t prediction"):
        assert header in printed
    report = json.loads(out.read_text("utf-8"))
    parsed = {probe.name: probe for probe in parse_probes(demo_probes.read_text("utf-8"), "d")}
    assert len(report["analogy"]) == 4
    for row in report["analogy"]:
        probe = parsed[row["probe"]]
        compared = [w.form for w in context_words(probe.contexts[probe.compare_index])]
        assert row["answer"] in compared
        assert turkish_lower(row["answer"]) not in {q.word for q in probe.query_words}
        assert -1.0 <= row["similarity"] <= 1.0 and 0.0 <= row["p_value"] <= 1.0
    assert {r["sense"] for r in report["contextuality"]} == {"different", "same"}
    assert len(report["wug"]) == 12
    notes = {r["word"]: r for r in report["words"] if r["probe"] == "kedi"}
    wug = notes["wug (context 1)"]
    if model == "bert_elmo":
        assert wug["units"] == "wug" and "embedded from characters" in wug["note"]
    else:
        assert len(wug["units"].split()) > 1 and "vector = their mean" in wug["note"]
