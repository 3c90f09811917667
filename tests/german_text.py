"""Small German text for the suite, made here from a seeded grammar (no published text): raw
sentences for masked-LM pretraining and the same kind of sentences as NER data in the converted
CoNLL form (`token<TAB>tag`, IOB2, GermEval 2014's outer types PER, LOC, ORG and LOCderiv).

The sentences exercise what German text brings to the preparation: umlauts and ß in every
position (Ärztin, Größe, Übersee), capitalised nouns, long compounds, abbreviations that Moses
must not split at their full stop (z. B., Dr., Nr.), ordinals (am 3. Mai), decimal commas,
German quotation marks („…“), hyphenated names (Baden-Württemberg) and contracted forms
(gibt's). Multi-word entities (Frankfurt am Main, Deutsche Bahn) give I- tags.
"""

import random
from pathlib import Path
from typing import List, Sequence, Tuple

Token = Tuple[str, str]  # (word, IOB2 tag)

FIRST_NAMES = (
    "Anna", "Jürgen", "Lena", "Sören", "Käthe", "Jonas", "Björn", "Grete", "Lukas", "Jörg",
    "Ute", "Maximilian", "Hülya", "Friederike", "Matthäus", "Özlem",
)  # fmt: skip
LAST_NAMES = (
    "Müller", "Schäfer", "Weiß", "Krüger", "Köhler", "Groß", "Vogel", "Hoffmann", "Bäcker",
    "Schröder", "Fuchs", "Lößner", "Meißner", "Brückner", "Wagner", "Günther",
)  # fmt: skip
PLACES = (
    ("München",), ("Köln",), ("Düsseldorf",), ("Nürnberg",), ("Lübeck",), ("Göttingen",),
    ("Saarbrücken",), ("Zürich",), ("Österreich",), ("Frankfurt", "am", "Main"),
    ("Bad", "Tölz"), ("Baden-Württemberg",), ("Würzburg",), ("Osnabrück",),
)  # fmt: skip
ORGANISATIONS = (
    ("Deutsche", "Bahn"), ("Universität", "Göttingen"), ("Stadtwerke", "Lübeck"), ("Siemens",),
    ("Bundesagentur", "für", "Arbeit"), ("Volkswagen",), ("Technische", "Universität", "Dresden"),
    ("Süddeutsche", "Zeitung"), ("Bäckerei", "Schmitz"), ("Landesbank", "Baden-Württemberg"),
)  # fmt: skip
PLACE_ADJECTIVES = ("bayerischen", "Münchner", "österreichischen", "Kölner", "schwäbischen")
WEEKDAYS = ("Montag", "Dienstag", "Mittwoch", "Donnerstag", "Freitag", "Samstag", "Sonntag")
MONTHS = ("Januar", "März", "Mai", "Juli", "September", "Oktober", "Dezember")
THINGS = (
    "Äpfel", "Brötchen", "Süßigkeiten", "Blumensträuße", "Fahrkarten", "Bücher", "Schlüssel",
    "Geschenke", "Würstchen", "Zeitschriften",
)  # fmt: skip
ADJECTIVES = ("schön", "kühl", "regnerisch", "großartig", "müde", "glücklich", "ärgerlich")
JOBS = ("Ärztin", "Lehrer", "Bürgermeisterin", "Straßenbahnfahrer", "Bäckermeister", "Köchin")


def _outside(text: str) -> List[Token]:
    return [(word, "O") for word in text.split()]


def _entity(words: Sequence[str], kind: str) -> List[Token]:
    return [(word, ("B-" if i == 0 else "I-") + kind) for i, word in enumerate(words)]


class _Grammar:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def pick(self, items: Sequence):
        return self.rng.choice(items)

    def person(self) -> List[Token]:
        if self.rng.random() < 0.3:
            return _entity([self.pick(LAST_NAMES)], "PER")
        return _entity([self.pick(FIRST_NAMES), self.pick(LAST_NAMES)], "PER")

    def place(self) -> List[Token]:
        return _entity(self.pick(PLACES), "LOC")

    def organisation(self) -> List[Token]:
        return _entity(self.pick(ORGANISATIONS), "ORG")

    def place_adjective(self) -> List[Token]:
        return _entity([self.pick(PLACE_ADJECTIVES)], "LOCderiv")

    def sentence(self) -> List[Token]:
        o, pick, n = _outside, self.pick, self.rng.randint(2, 29)
        templates = (
            lambda: self.person() + o(f"wohnt seit {n} Jahren in") + self.place() + o("."),
            lambda: self.person()
            + o("arbeitet als")
            + o(pick(JOBS))
            + o("bei der")
            + self.organisation()
            + o("."),
            lambda: o(f"Am {pick(WEEKDAYS)} fährt")
            + self.person()
            + o("mit dem Zug nach")
            + self.place()
            + o("."),
            lambda: o("Die")
            + self.organisation()
            + o("eröffnet im")
            + o(pick(MONTHS))
            + o("ein neues Büro in")
            + self.place()
            + o("."),
            lambda: o("„ Das Wetter ist heute")
            + o(pick(ADJECTIVES))
            + o("“ , sagte")
            + self.person()
            + o("in")
            + self.place()
            + o("."),
            lambda: o("Dr.")
            + self.person()
            + o("und Prof.")
            + self.person()
            + o("besuchen z. B. die Ausstellung in")
            + self.place()
            + o("."),
            lambda: o(f"Der Vorstand trifft sich am {n}. {pick(MONTHS)} in der")
            + o("Nähe von")
            + self.place()
            + o("."),
            lambda: o("Die Kinder möchten gern")
            + o(pick(THINGS))
            + o("und")
            + o(pick(THINGS))
            + o("kaufen ."),
            lambda: o(f"Über die Straße läuft ein großer Hund , und es gibt's {n} Würstchen ."),
            lambda: o("Auf dem")
            + self.place_adjective()
            + o("Markt kosten")
            + o(pick(THINGS))
            + o(f"nur {n},50 Euro ."),
            lambda: o("Laut der")
            + self.organisation()
            + o("ist die Größe der Straßenbahn")
            + o(pick(ADJECTIVES))
            + o("."),
            lambda: o(f"Haus Nr. {n} gehört")
            + self.person()
            + o(", der früher in")
            + self.place()
            + o("Fußball spielte ."),
            lambda: o("Warum ist die Übersee-Lieferung aus") + self.place() + o("so spät ?"),
            lambda: self.person()
            + o("schreibt für die")
            + self.organisation()
            + o("über die")
            + self.place_adjective()
            + o("Landwirtschaft ."),
        )
        return self.rng.choice(templates)()


def tagged_sentences(count: int, seed: int) -> List[List[Token]]:
    """`count` sentences of (word, tag) pairs, the same for the same seed."""
    grammar = _Grammar(seed)
    return [grammar.sentence() for _ in range(count)]


_NO_SPACE_BEFORE = {".", ",", "?", "“"}
_NO_SPACE_AFTER = {"„"}


def raw_line(words: Sequence[str]) -> str:
    """The words as running text: no space before . , ? “ nor after „."""
    line = ""
    for word in words:
        if line and word not in _NO_SPACE_BEFORE and not line.endswith(tuple(_NO_SPACE_AFTER)):
            line += " "
        line += word
    return line


def write_raw_text(path: Path, count: int, seed: int, document_sentences: int = 5) -> None:
    """`count` sentences of running text, an empty line after every `document_sentences`."""
    lines: List[str] = []
    for index, sentence in enumerate(tagged_sentences(count, seed)):
        if index and index % document_sentences == 0:
            lines.append("")
        lines.append(raw_line([word for word, _ in sentence]))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_conll(path: Path, count: int, seed: int) -> None:
    """`count` sentences as converted CoNLL: `word<TAB>tag` lines, a blank line between."""
    blocks = [
        "\n".join(f"{word}\t{tag}" for word, tag in sentence)
        for sentence in tagged_sentences(count, seed)
    ]
    path.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")
