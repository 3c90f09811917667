"""A seeded synthetic English→Turkish parallel corpus: the embedded demo data of fairseq-struct.

A small grammar whose Turkish side is real Turkish built by rule (vowel harmony, consonant
alternation, case, possession, tense, negation, person agreement, questions), with exactly one
Turkish translation of every English sentence, so that a small Transformer can learn it.

    fairseq-struct demo-corpus --out-dir data/demo [--seed 1]
"""

from __future__ import annotations

import argparse
import enum
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

# ------------------------------------------------------------------------------- phonology

FRONT_VOWELS = "eiöü"
BACK_VOWELS = "aıou"
VOWELS = FRONT_VOWELS + BACK_VOWELS
ROUNDED_VOWELS = "öüou"
VOICELESS_CONSONANTS = "çfhkpsşt"  # "FıSTıKÇı ŞaHaP"
SOFTENED = {"p": "b", "ç": "c", "t": "d", "k": "ğ"}


def last_vowel(text: str) -> Optional[str]:
    for char in reversed(text):
        if char in VOWELS:
            return char
    return None


def harmony_2(text: str) -> str:
    """The two-way vowel ``A`` after ``text``: e after a front vowel, a after a back vowel."""
    return "a" if last_vowel(text) in BACK_VOWELS else "e"


def harmony_4(text: str) -> str:
    """The four-way vowel ``I`` after ``text``: as front and as rounded as the last vowel."""
    vowel = last_vowel(text)
    if vowel in FRONT_VOWELS:
        return "ü" if vowel in ROUNDED_VOWELS else "i"
    return "u" if vowel in ROUNDED_VOWELS else "ı"


def ends_in_vowel(text: str) -> bool:
    return text[-1] in VOWELS


def soften(text: str) -> str:
    """Final p/ç/t/k → b/c/d/ğ (kitap → kitab-); after n, k becomes g (renk → reng-)."""
    final = text[-1]
    if final == "k" and text[-2:-1] == "n":
        return text[:-1] + "g"
    return text[:-1] + SOFTENED.get(final, final)


def softens_by_default(word: str) -> bool:
    """Polysyllabic words ending in p/ç/t/k soften; most monosyllables (süt → sütü) do not."""
    return word[-1] in SOFTENED and sum(char in VOWELS for char in word) > 1


@dataclass(frozen=True)
class Stem:
    """A word under construction; ``softens`` says whether its final p/ç/t/k softens."""

    text: str
    softens: bool = False


def resolve_suffix(preceding: str, template: str) -> str:
    """Spell a suffix template after ``preceding`` (harmony, devoicing, buffer letters).

    Templates use the archiphoneme notation of Turkish grammars: ``A`` (e/a) and ``I``
    (ı/i/u/ü) are harmonising vowels, ``D`` is d/t, ``(y)``/``(s)``/``(n)`` appear only after a
    vowel, ``(I)`` only after a consonant, and a final ``K`` is a k that softens before a vowel
    (`attach`).
    """
    out = ""
    i = 0
    while i < len(template):
        if template[i] == "(":
            optional = template[i + 1]
            i += 3
            after_vowel = ends_in_vowel(preceding + out)
            # buffer consonants separate two vowels; a linking I separates two consonants
            if (optional == "I") == after_vowel:
                continue
            symbol = optional
        else:
            symbol = template[i]
            i += 1
        context = preceding + out
        if symbol == "A":
            out += harmony_2(context)
        elif symbol == "I":
            out += harmony_4(context)
        elif symbol == "D":
            out += "t" if context[-1] in VOICELESS_CONSONANTS else "d"
        else:
            out += symbol.lower()
    return out


def attach(stem: Stem, template: str) -> Stem:
    """Attach a suffix template; the stem softens first when the suffix starts with a vowel."""
    if not template:
        return stem
    text = stem.text
    suffix = resolve_suffix(text, template)
    if stem.softens and suffix and suffix[0] in VOWELS:
        text = soften(text)
    return Stem(text + suffix, softens=template.endswith("K"))


# ------------------------------------------------------------------------------- grammar


class Person(enum.Enum):
    P1SG = "1sg"
    P2SG = "2sg"
    P3SG = "3sg"
    P1PL = "1pl"
    P2PL = "2pl"
    P3PL = "3pl"


class Case(enum.Enum):
    NOM = "nom"
    ACC = "acc"
    DAT = "dat"
    LOC = "loc"
    ABL = "abl"


class Tense(enum.Enum):
    PAST = "past"
    PROGRESSIVE = "progressive"
    FUTURE = "future"


PLURAL = "lAr"
POSSESSIVE = {
    Person.P1SG: "(I)m",
    Person.P2SG: "(I)n",
    Person.P3SG: "(s)I",
    Person.P1PL: "(I)mIz",
}
CASE = {Case.NOM: "", Case.ACC: "(y)I", Case.DAT: "(y)A", Case.LOC: "DA", Case.ABL: "DAn"}
# After the 3sg possessive the case endings take the pronominal n: kitabını, evine, odasında.
CASE_AFTER_3SG_POSSESSIVE = {
    Case.NOM: "",
    Case.ACC: "nI",
    Case.DAT: "nA",
    Case.LOC: "nDA",
    Case.ABL: "nDAn",
}

NEGATION = "mA"
PAST = "DI"
FUTURE = "(y)AcAK"
# Two agreement paradigms: the "k" set after the past (geldik), the "z" set after the
# progressive, the future and the question particle (geliyoruz, gelecek miyiz).
AGREEMENT_PAST = {
    Person.P1SG: "m",
    Person.P2SG: "n",
    Person.P3SG: "",
    Person.P1PL: "k",
    Person.P2PL: "nIz",
    Person.P3PL: "lAr",
}
AGREEMENT = {
    Person.P1SG: "(y)Im",
    Person.P2SG: "sIn",
    Person.P3SG: "",
    Person.P1PL: "(y)Iz",
    Person.P2PL: "sInIz",
    Person.P3PL: "lAr",
}
QUESTION_PARTICLE = "mI"


def inflect_noun(
    stem: Stem, plural: bool = False, possessor: Optional[Person] = None, case: Case = Case.NOM
) -> str:
    """Noun + (plural) + (possessive) + case, in the fixed Turkish order: ev-ler-im-de."""
    if plural:
        stem = attach(stem, PLURAL)
    if possessor is not None:
        stem = attach(stem, POSSESSIVE[possessor])
    case_suffixes = CASE_AFTER_3SG_POSSESSIVE if possessor is Person.P3SG else CASE
    return attach(stem, case_suffixes[case]).text


def progressive(stem: Stem) -> Stem:
    """-(I)yor: a stem-final vowel is replaced by I (okuyor, bekliyor, gelmiyor, yiyor).

    The replacing vowel harmonises with the vowel before it; ye- has none left, so it
    harmonises with the dropped e.
    """
    text = stem.text
    if ends_in_vowel(text):
        remainder = text[:-1]
        vowel = harmony_4(remainder if last_vowel(remainder) else text)
        return Stem(remainder + vowel + "yor")
    return attach(stem, "Iyor")


def conjugate(
    verb: Verb, tense: Tense, person: Person, negative: bool = False, question: bool = False
) -> list[str]:
    """The verb's Turkish words: tense, negation, agreement and the question particle."""
    *preverbs, last = verb.tr.split(" ")
    stem = Stem(last, verb.softens)
    if negative:
        stem = attach(stem, NEGATION)
    if tense is Tense.PAST:
        stem = attach(stem, PAST)
    elif tense is Tense.PROGRESSIVE:
        stem = progressive(stem)
    else:
        if verb.raises_before_y and not negative:
            # ye- and de- raise their vowel before the buffer y: yiyecek, not *yeyecek
            stem = Stem(stem.text[:-1] + "i")
        stem = attach(stem, FUTURE)
    agreement = AGREEMENT_PAST if tense is Tense.PAST else AGREEMENT
    if not question:
        return preverbs + [attach(stem, agreement[person]).text]
    # The particle carries the person ending (geliyor musun, gelecek misin), except after the
    # past (geldin mi) and in the 3pl, whose -lAr stays on the verb (geliyorlar mı).
    if tense is Tense.PAST or person is Person.P3PL:
        verb_word = attach(stem, agreement[person]).text
        return preverbs + [verb_word, resolve_suffix(verb_word, QUESTION_PARTICLE)]
    return preverbs + [stem.text, resolve_suffix(stem.text, QUESTION_PARTICLE + agreement[person])]


def capitalize_tr(text: str) -> str:
    """Upper-case the first letter with Turkish casing (i → İ, ı → I)."""
    first = {"i": "İ", "ı": "I"}.get(text[0], text[0].upper())
    return first + text[1:]


# ------------------------------------------------------------------------------- lexicon


@dataclass(frozen=True)
class Noun:
    tr: str
    en: str
    en_plural: Optional[str] = ""  # "" → regular English plural; None → never plural
    softens: Optional[bool] = None  # None → softens_by_default
    mass: bool = False  # no article and no plural: "I drank milk." → "Süt içtim."
    prep: str = "in"  # English preposition as a place or container: "at the school"
    possessable: bool = True
    kin: bool = False  # only with a possessor: "my mother", never "the mother"

    @property
    def stem(self) -> Stem:
        softens = softens_by_default(self.tr) if self.softens is None else self.softens
        return Stem(self.tr, softens)

    @property
    def can_be_plural(self) -> bool:
        return not self.mass and self.en_plural is not None

    @property
    def en_plural_form(self) -> str:
        if self.en_plural:
            return self.en_plural
        if self.en.endswith(("s", "x", "ch", "sh")):
            return self.en + "es"
        if self.en.endswith("y") and self.en[-2] not in "aeiou":
            return self.en[:-1] + "ies"
        return self.en + "s"


NOUNS = {
    noun.tr: noun
    for noun in (
        # people and animals
        Noun("çocuk", "child", "children"),
        Noun("öğretmen", "teacher"),
        Noun("doktor", "doctor"),
        Noun("öğrenci", "student"),
        Noun("arkadaş", "friend"),
        Noun("komşu", "neighbour"),
        Noun("misafir", "guest"),
        Noun("bebek", "baby"),
        Noun("hemşire", "nurse"),
        Noun("şoför", "driver"),
        Noun("kadın", "woman", "women", possessable=False),
        Noun("adam", "man", "men", possessable=False),
        Noun("kız", "girl", possessable=False),
        Noun("polis", "police officer", possessable=False),
        Noun("anne", "mother", None, kin=True),
        Noun("baba", "father", None, kin=True),
        Noun("kedi", "cat"),
        Noun("köpek", "dog"),
        Noun("kuş", "bird"),
        Noun("at", "horse"),
        Noun("inek", "cow"),
        Noun("ördek", "duck"),
        Noun("tavşan", "rabbit"),
        # places
        Noun("ev", "house"),
        Noun("okul", "school", prep="at"),
        Noun("bahçe", "garden"),
        Noun("oda", "room"),
        Noun("mutfak", "kitchen"),
        Noun("sınıf", "classroom"),
        Noun("ofis", "office", prep="at"),
        Noun("köy", "village"),
        Noun("balkon", "balcony", prep="on"),
        Noun("havuz", "pool"),
        Noun("park", "park", possessable=False),
        Noun("pazar", "market", prep="at", possessable=False),
        Noun("hastane", "hospital", prep="at", possessable=False),
        Noun("kütüphane", "library", prep="at", possessable=False),
        Noun("istasyon", "station", prep="at", possessable=False),
        Noun("müze", "museum", prep="at", possessable=False),
        Noun("plaj", "beach", prep="on", possessable=False),
        Noun("sinema", "cinema", prep="at", possessable=False),
        Noun("lokanta", "restaurant", prep="at", possessable=False),
        Noun("otel", "hotel", prep="at", possessable=False),
        Noun("orman", "forest", possessable=False),
        Noun("köprü", "bridge", prep="on", possessable=False),
        Noun("sokak", "street", prep="on", possessable=False),
        Noun("banka", "bank", prep="at", possessable=False),
        Noun("üniversite", "university", prep="at", possessable=False),
        Noun("deniz", "sea", possessable=False),
        Noun("göl", "lake", possessable=False),
        Noun("otobüs", "bus", possessable=False),
        Noun("tren", "train", possessable=False),
        Noun("gemi", "ship", possessable=False),
        Noun("uçak", "plane", possessable=False),
        # food and drink
        Noun("elma", "apple"),
        Noun("armut", "pear"),
        Noun("portakal", "orange"),
        Noun("muz", "banana"),
        Noun("yumurta", "egg"),
        Noun("kurabiye", "cookie"),
        Noun("limon", "lemon"),
        Noun("domates", "tomato", "tomatoes"),
        Noun("havuç", "carrot"),
        Noun("pasta", "cake"),
        Noun("salata", "salad"),
        Noun("ekmek", "bread", mass=True),
        Noun("peynir", "cheese", mass=True),
        Noun("çorba", "soup", mass=True),
        Noun("pilav", "rice", mass=True),
        Noun("makarna", "pasta", mass=True),
        Noun("balık", "fish", mass=True),
        Noun("tavuk", "chicken", mass=True),
        Noun("süt", "milk", mass=True),
        Noun("çay", "tea", mass=True),
        Noun("kahve", "coffee", mass=True),
        Noun("limonata", "lemonade", mass=True),
        Noun("kola", "cola", mass=True),
        # things
        Noun("kitap", "book"),
        Noun("gazete", "newspaper"),
        Noun("mektup", "letter"),
        Noun("dergi", "magazine"),
        Noun("şiir", "poem"),
        Noun("gömlek", "shirt"),
        Noun("kazak", "sweater"),
        Noun("elbise", "dress"),
        Noun("palto", "coat"),
        Noun("şapka", "hat"),
        Noun("ayakkabı", "shoe"),
        Noun("tabak", "plate"),
        Noun("bardak", "glass"),
        Noun("kaşık", "spoon"),
        Noun("bıçak", "knife", "knives"),
        Noun("anahtar", "key"),
        Noun("telefon", "phone"),
        Noun("kalem", "pen"),
        Noun("defter", "notebook"),
        Noun("bilet", "ticket", softens=False),  # a loanword: bileti, not *bilede
        Noun("şemsiye", "umbrella"),
        Noun("fotoğraf", "photo"),
        Noun("oyuncak", "toy"),
        Noun("top", "ball"),
        Noun("çiçek", "flower"),
        Noun("harita", "map"),
        Noun("masa", "table", prep="on"),
        Noun("sandalye", "chair", prep="on"),
        Noun("kutu", "box"),
        Noun("çanta", "bag"),
        Noun("dolap", "cupboard"),
        Noun("yatak", "bed", prep="on"),
        Noun("raf", "shelf", "shelves", prep="on"),
        Noun("lamba", "lamp"),
        Noun("ayna", "mirror"),
        Noun("kapı", "door"),
        Noun("pencere", "window"),
        Noun("araba", "car"),
        Noun("bisiklet", "bicycle", softens=False),
        Noun("bilgisayar", "computer"),
        Noun("radyo", "radio"),
        Noun("film", "film"),
        Noun("maç", "match"),
        Noun("müzik", "music", mass=True),
        Noun("şarkı", "song"),
    )
}


def nouns(words: str) -> tuple[Noun, ...]:
    """Look up space-separated Turkish lemmas in NOUNS."""
    return tuple(NOUNS[word] for word in words.split())


PEOPLE = nouns(
    "çocuk öğretmen doktor öğrenci arkadaş komşu misafir hemşire şoför kadın adam kız polis anne"
    " baba"
)
ANIMALS = nouns("kedi köpek kuş at inek ördek tavşan")
ANIMATES = PEOPLE + nouns("bebek") + ANIMALS
# The samplers test membership once a clause; a set answers without comparing every noun.
PEOPLE_SET, ANIMATE_SET = frozenset(PEOPLE), frozenset(ANIMATES)
HOME = nouns("ev bahçe oda mutfak sınıf ofis köy balkon okul")
PUBLIC_PLACES = nouns(
    "park pazar hastane kütüphane istasyon müze plaj sinema lokanta otel orman köprü sokak banka"
    " üniversite"
)
PLACES = HOME + PUBLIC_PLACES
SHOPS = nouns("pazar park istasyon sokak")
EATING_PLACES = nouns("ev mutfak bahçe balkon okul ofis park lokanta")
PLAY_PLACES = nouns("bahçe oda park plaj sokak")
WATERS = nouns("deniz göl havuz")
VEHICLES = nouns("otobüs tren gemi uçak")
CONTAINERS = nouns("masa kutu çanta dolap yatak sandalye raf")
READING = nouns("kitap gazete mektup dergi")
FOOD = nouns(
    "elma armut portakal muz yumurta kurabiye limon domates havuç pasta salata ekmek peynir çorba"
    " pilav makarna balık tavuk"
)
DISHES = nouns("yumurta havuç pasta ekmek çorba pilav makarna balık tavuk")
DRINKS = nouns("süt çay kahve limonata kola")
CLOTHES = nouns("gömlek kazak elbise palto şapka ayakkabı")
KITCHENWARE = nouns("tabak bardak kaşık bıçak")
SMALL_THINGS = nouns(
    "anahtar telefon kalem defter bilet şemsiye fotoğraf oyuncak top çiçek harita kitap"
)
FURNITURE = nouns("masa sandalye lamba ayna kapı pencere dolap")
MACHINES = nouns("araba bisiklet bilgisayar radyo telefon")
THINGS = SMALL_THINGS + CLOTHES + KITCHENWARE + nouns("araba bisiklet gazete kutu çanta")

# Adjectives go only with inanimate nouns: "a big box" → "büyük bir kutu".
ADJECTIVES = {
    "büyük": "big",
    "küçük": "small",
    "yeni": "new",
    "eski": "old",
    "kırmızı": "red",
    "mavi": "blue",
    "beyaz": "white",
    "siyah": "black",
    "güzel": "beautiful",
}


class Frame(enum.Enum):
    """What a verb combines with."""

    INTRANSITIVE = "intransitive"  # + optional place, goal or source adverbial
    TRANSITIVE = "transitive"  # + object, optional place
    DITRANSITIVE = "ditransitive"  # + object + dative goal ("to my friend", "on the table")


@dataclass(frozen=True)
class Verb:
    tr: str  # stem; a light-verb compound inflects its last word ("tamir et")
    en: tuple[str, str, str]  # base, past, -ing; a particle follows: ("look for", ...)
    frame: Frame
    objects: tuple[Noun, ...] = ()
    locations: tuple[Noun, ...] = ()  # locative: "in the garden"
    goals: tuple[Noun, ...] = ()  # dative: "to the school", "on the table"
    sources: tuple[Noun, ...] = ()  # ablative: "from the market"
    subjects: tuple[Noun, ...] = PEOPLE
    softens: bool = False  # git → gidiyor, kaybet → kaybediyor
    raises_before_y: bool = False  # ye → yiyecek
    goal_prep: Optional[str] = "to"  # None → the goal noun's own ("on the table"); "" → none
    source_prep: str = "from"  # "" for a particle verb: "get off the bus"
    goal_optional: bool = False

    def adverbials(self) -> dict[Case, tuple[Noun, ...]]:
        """The nouns that can fill each adverbial slot, by the case Turkish marks it with."""
        return {Case.DAT: self.goals, Case.ABL: self.sources, Case.LOC: self.locations}


OPENABLE = nouns("kapı pencere kutu çanta dolap kitap defter")
# fmt: off
VERBS = (
    # intransitive
    Verb("gel", ("come", "came", "coming"), Frame.INTRANSITIVE, goals=PLACES, sources=PLACES,
         subjects=ANIMATES),
    Verb("git", ("go", "went", "going"), Frame.INTRANSITIVE, goals=PLACES, subjects=ANIMATES,
         softens=True),
    Verb("dön", ("return", "returned", "returning"), Frame.INTRANSITIVE, goals=PLACES,
         sources=PLACES),
    Verb("koş", ("run", "ran", "running"), Frame.INTRANSITIVE, goals=PLACES,
         locations=PLAY_PLACES, subjects=ANIMATES),
    Verb("yürü", ("walk", "walked", "walking"), Frame.INTRANSITIVE, goals=PLACES,
         locations=PLAY_PLACES, subjects=ANIMATES),
    Verb("uyu", ("sleep", "slept", "sleeping"), Frame.INTRANSITIVE, locations=HOME,
         subjects=ANIMATES),
    Verb("otur", ("sit", "sat", "sitting"), Frame.INTRANSITIVE, locations=PLACES),
    Verb("bekle", ("wait", "waited", "waiting"), Frame.INTRANSITIVE, locations=PLACES),
    Verb("çalış", ("work", "worked", "working"), Frame.INTRANSITIVE, locations=PLACES),
    Verb("oyna", ("play", "played", "playing"), Frame.INTRANSITIVE, locations=PLAY_PLACES,
         subjects=ANIMATES),
    Verb("yüz", ("swim", "swam", "swimming"), Frame.INTRANSITIVE, locations=WATERS,
         subjects=ANIMATES),
    Verb("dinlen", ("rest", "rested", "resting"), Frame.INTRANSITIVE, locations=HOME),
    Verb("konuş", ("talk", "talked", "talking"), Frame.INTRANSITIVE, locations=PLACES),
    Verb("gül", ("laugh", "laughed", "laughing"), Frame.INTRANSITIVE),
    Verb("ağla", ("cry", "cried", "crying"), Frame.INTRANSITIVE, locations=HOME),
    Verb("uyan", ("wake up", "woke up", "waking up"), Frame.INTRANSITIVE, locations=HOME,
         subjects=ANIMATES),
    Verb("şarkı söyle", ("sing", "sang", "singing"), Frame.INTRANSITIVE, locations=PLACES),
    Verb("bin", ("get on", "got on", "getting on"), Frame.INTRANSITIVE, goals=VEHICLES,
         goal_prep=""),
    Verb("in", ("get off", "got off", "getting off"), Frame.INTRANSITIVE, sources=VEHICLES,
         source_prep=""),
    # transitive
    Verb("oku", ("read", "read", "reading"), Frame.TRANSITIVE, READING, locations=PLACES),
    Verb("yaz", ("write", "wrote", "writing"), Frame.TRANSITIVE, nouns("mektup şiir kitap"),
         locations=HOME),
    Verb("ye", ("eat", "ate", "eating"), Frame.TRANSITIVE, FOOD, locations=EATING_PLACES,
         subjects=ANIMATES, raises_before_y=True),
    Verb("iç", ("drink", "drank", "drinking"), Frame.TRANSITIVE, DRINKS,
         locations=EATING_PLACES),
    Verb("pişir", ("cook", "cooked", "cooking"), Frame.TRANSITIVE, DISHES,
         locations=EATING_PLACES),
    Verb("kes", ("cut", "cut", "cutting"), Frame.TRANSITIVE, FOOD, locations=EATING_PLACES),
    Verb("satın al", ("buy", "bought", "buying"), Frame.TRANSITIVE, THINGS + FOOD,
         locations=SHOPS),
    Verb("sat", ("sell", "sold", "selling"), Frame.TRANSITIVE, THINGS, locations=SHOPS),
    Verb("ziyaret et", ("visit", "visited", "visiting"), Frame.TRANSITIVE, PEOPLE + PLACES,
         softens=True),
    Verb("ara", ("look for", "looked for", "looking for"), Frame.TRANSITIVE,
         SMALL_THINGS + ANIMATES, locations=PLACES),
    Verb("bekle", ("wait for", "waited for", "waiting for"), Frame.TRANSITIVE,
         PEOPLE + VEHICLES, locations=PLACES),
    Verb("aç", ("open", "opened", "opening"), Frame.TRANSITIVE, OPENABLE),
    Verb("kapat", ("close", "closed", "closing"), Frame.TRANSITIVE, OPENABLE),
    Verb("yıka", ("wash", "washed", "washing"), Frame.TRANSITIVE,
         KITCHENWARE + CLOTHES + nouns("araba bisiklet kedi köpek")),
    Verb("temizle", ("clean", "cleaned", "cleaning"), Frame.TRANSITIVE,
         HOME + FURNITURE + KITCHENWARE),
    Verb("boya", ("paint", "painted", "painting"), Frame.TRANSITIVE,
         nouns("ev oda sınıf balkon") + FURNITURE),
    Verb("tamir et", ("repair", "repaired", "repairing"), Frame.TRANSITIVE,
         MACHINES + FURNITURE, softens=True),
    Verb("çiz", ("draw", "drew", "drawing"), Frame.TRANSITIVE,
         ANIMALS + nouns("ev çiçek harita araba")),
    Verb("kır", ("break", "broke", "breaking"), Frame.TRANSITIVE,
         nouns("bardak tabak lamba ayna pencere kalem telefon"), subjects=ANIMATES),
    Verb("taşı", ("carry", "carried", "carrying"), Frame.TRANSITIVE,
         nouns("kutu çanta masa sandalye lamba kitap bebek")),
    Verb("kaybet", ("lose", "lost", "losing"), Frame.TRANSITIVE,
         nouns("anahtar telefon kalem defter bilet şemsiye çanta"), locations=PLACES,
         softens=True),
    Verb("dinle", ("listen to", "listened to", "listening to"), Frame.TRANSITIVE,
         nouns("müzik şarkı radyo öğretmen"), locations=HOME),
    Verb("izle", ("watch", "watched", "watching"), Frame.TRANSITIVE,
         nouns("film maç") + ANIMALS, locations=HOME),
    Verb("besle", ("feed", "fed", "feeding"), Frame.TRANSITIVE, ANIMALS, locations=HOME),
    # ditransitive
    Verb("ver", ("give", "gave", "giving"), Frame.DITRANSITIVE, THINGS + FOOD, goals=PEOPLE),
    Verb("göster", ("show", "showed", "showing"), Frame.DITRANSITIVE, THINGS, goals=PEOPLE),
    Verb("gönder", ("send", "sent", "sending"), Frame.DITRANSITIVE,
         nouns("mektup kitap fotoğraf çiçek harita bilet"), goals=PEOPLE),
    Verb("getir", ("bring", "brought", "bringing"), Frame.DITRANSITIVE, THINGS + FOOD,
         goals=PEOPLE + HOME, goal_optional=True),
    Verb("koy", ("put", "put", "putting"), Frame.DITRANSITIVE, SMALL_THINGS + KITCHENWARE,
         goals=CONTAINERS, goal_prep=None),
)
# fmt: on


# ------------------------------------------------------------------------------- sentences

PRONOUNS = {
    Person.P1SG: ("I",),
    Person.P2SG: ("you",),
    Person.P3SG: ("he", "she"),
    Person.P1PL: ("we",),
    Person.P2PL: ("you all",),
    Person.P3PL: ("they",),
}
# Time adverbs that fit each tense: Turkish puts them first, English last.
TIME_ADVERBS = {
    Tense.PAST: (("dün", "yesterday"), ("geçen hafta", "last week"), ("bugün", "today")),
    Tense.PROGRESSIVE: (("şimdi", "now"), ("bugün", "today")),
    Tense.FUTURE: (("yarın", "tomorrow"), ("gelecek hafta", "next week"), ("bugün", "today")),
}
POSSESSIVE_DETERMINERS = {
    Person.P1SG: ("my",),
    Person.P2SG: ("your",),
    Person.P3SG: ("his", "her"),
    Person.P1PL: ("our",),
}


@dataclass(frozen=True)
class NounPhrase:
    noun: Noun
    definite: bool = True
    plural: bool = False
    possessor: Optional[Person] = None
    possessor_en: str = ""  # "his" or "her" for the 3sg
    adjective: Optional[str] = None  # a key of ADJECTIVES

    def english(self) -> str:
        words = [ADJECTIVES[self.adjective]] if self.adjective else []
        words.append(self.noun.en_plural_form if self.plural else self.noun.en)
        if self.possessor is not None:
            determiner = [self.possessor_en]
        elif self.definite:
            determiner = ["the"]
        elif self.noun.mass:
            determiner = []
        else:
            determiner = ["an" if words[0][0] in "aeiou" else "a"]
        return " ".join(determiner + words)

    def turkish(self, case: Case) -> list[str]:
        words = [self.adjective] if self.adjective else []
        if not self.definite:
            # an indefinite object is caseless, with "bir" after the adjective: büyük bir ev
            return words + ([] if self.noun.mass else ["bir"]) + [self.noun.tr]
        return words + [inflect_noun(self.noun.stem, self.plural, self.possessor, case)]


def sample_noun_phrase(
    rng: random.Random,
    pool: tuple[Noun, ...],
    allow_indefinite: bool = False,
    allow_plural: bool = True,
    exclude: Optional[Noun] = None,
) -> NounPhrase:
    candidates = pool if exclude is None else [other for other in pool if other != exclude]
    noun = rng.choice(candidates)
    possessor, possessor_en = None, ""
    if noun.kin or (noun.possessable and rng.random() < 0.35):
        possessor = rng.choice(list(POSSESSIVE_DETERMINERS))
        possessor_en = rng.choice(POSSESSIVE_DETERMINERS[possessor])
    definite = possessor is not None or not allow_indefinite or rng.random() < 0.6
    plural = allow_plural and definite and noun.can_be_plural and rng.random() < 0.25
    adjective = None
    if allow_indefinite and noun not in ANIMATE_SET and not noun.mass and rng.random() < 0.25:
        adjective = rng.choice(sorted(ADJECTIVES))
    return NounPhrase(noun, definite, plural, possessor, possessor_en, adjective)


@dataclass(frozen=True)
class Subject:
    """A pronoun (dropped in Turkish) or a noun phrase (3sg agreement, also when plural)."""

    person: Person
    en: str
    noun_phrase: Optional[NounPhrase] = None

    @property
    def be(self) -> str:
        if self.noun_phrase is not None:
            return "are" if self.noun_phrase.plural else "is"
        return {Person.P1SG: "am", Person.P3SG: "is"}.get(self.person, "are")


def sample_subject(rng: random.Random, verb: Verb) -> Subject:
    if rng.random() < 0.65:
        person = rng.choice(list(PRONOUNS))
        return Subject(person, rng.choice(PRONOUNS[person]))
    phrase = sample_noun_phrase(rng, verb.subjects)
    return Subject(Person.P3SG, phrase.english(), phrase)


def sample_adverbial_case(rng: random.Random, verb: Verb) -> Optional[Case]:
    """Which adverbial the clause gets, if any: a goal (dative), source (ablative) or place."""
    if verb.frame is Frame.DITRANSITIVE:
        return None if verb.goal_optional and rng.random() < 0.5 else Case.DAT
    options = [case for case, pool in verb.adverbials().items() if pool]
    if not options or rng.random() < 0.2:
        return None
    return rng.choice(options)


def english_clause(
    subject: Subject, verb: Verb, tense: Tense, negative: bool, question: bool, rest: list[str]
) -> str:
    base, past, ing = verb.en
    if tense is Tense.PAST:
        if question:
            words = ["did", subject.en, base]
        else:
            words = [subject.en, "did not", base] if negative else [subject.en, past]
    elif tense is Tense.PROGRESSIVE:
        if question:
            words = [subject.be, subject.en, ing]
        else:
            words = [subject.en, subject.be] + (["not"] if negative else []) + [ing]
    else:
        if question:
            words = ["will", subject.en, base]
        else:
            words = [subject.en, "will"] + (["not"] if negative else []) + [base]
    sentence = " ".join(words + rest)
    return sentence[0].upper() + sentence[1:] + ("?" if question else ".")


@dataclass(frozen=True)
class Clause:
    """One sampled sentence before it is spelled out; ``sample_pair`` renders it in both languages.

    Kept as structure so that labelled data (synthetic_labelled_tr) knows every word's role.
    """

    verb: Verb
    subject: Subject
    tense: Tense
    negative: bool
    question: bool
    obj: Optional[NounPhrase] = None
    case: Optional[Case] = None  # the case of the adverbial
    adverbial: Optional[NounPhrase] = None
    time: tuple[str, str] = ("", "")  # (Turkish, English) time adverb; ("", "") for none

    def english(self) -> str:
        rest_en = [self.obj.english()] if self.obj is not None else []
        if self.adverbial is not None:
            prep = {Case.DAT: self.verb.goal_prep, Case.ABL: self.verb.source_prep}.get(self.case)
            if prep is None:
                prep = self.adverbial.noun.prep
            rest_en += [prep, self.adverbial.english()] if prep else [self.adverbial.english()]
        if self.time[1]:
            rest_en.append(self.time[1])
        return english_clause(
            self.subject, self.verb, self.tense, self.negative, self.question, rest_en
        )

    def turkish_constituents(self) -> list[tuple[str, list[str]]]:
        """The Turkish words in order, grouped by role: time, subject, object, adverbial, verb.

        Turkish order: time, subject, definite object, adverbial, indefinite object (right before
        the verb), verb. Roles without words (a dropped pronoun subject) are left out.
        """
        parts = [("time", self.time[0].split())]
        if self.subject.noun_phrase is not None:
            parts.append(("subject", self.subject.noun_phrase.turkish(Case.NOM)))
        if self.obj is not None and self.obj.definite:
            parts.append(("object", self.obj.turkish(Case.ACC)))
        if self.adverbial is not None:
            parts.append(("adverbial", self.adverbial.turkish(self.case)))
        if self.obj is not None and not self.obj.definite:
            parts.append(("object", self.obj.turkish(Case.NOM)))
        verb_words = conjugate(
            self.verb, self.tense, self.subject.person, self.negative, self.question
        )
        parts.append(("verb", verb_words))
        return [(role, words) for role, words in parts if words]

    def turkish(self) -> str:
        words = [word for _, part in self.turkish_constituents() for word in part]
        return capitalize_tr(" ".join(words)) + ("?" if self.question else ".")


def sample_clause(rng: random.Random) -> Clause:
    """One clause, drawn in a fixed order of ``rng`` calls (the corpus of a seed depends on it)."""
    verb = rng.choice(VERBS)
    subject = sample_subject(rng, verb)
    tense = rng.choice(list(Tense))
    mood = rng.random()
    question = mood < 0.25
    negative = 0.25 <= mood < 0.5

    obj = None
    if verb.frame is not Frame.INTRANSITIVE:
        obj = sample_noun_phrase(rng, verb.objects, allow_indefinite=True)
    case = sample_adverbial_case(rng, verb)
    adverbial = None
    if case is not None:
        pool = verb.adverbials()[case]
        subject_noun = subject.noun_phrase.noun if subject.noun_phrase else None
        # only people come in the plural as adverbials: "to the children", not "in the gardens"
        people_only = all(noun in PEOPLE_SET for noun in pool)
        adverbial = sample_noun_phrase(rng, pool, allow_plural=people_only, exclude=subject_noun)
    time = rng.choice(TIME_ADVERBS[tense]) if rng.random() < 0.3 else ("", "")
    return Clause(verb, subject, tense, negative, question, obj, case, adverbial, time)


def sample_pair(rng: random.Random) -> tuple[str, str]:
    """One sentence pair (English, Turkish)."""
    clause = sample_clause(rng)
    return clause.english(), clause.turkish()


def generate_corpus(n: int, seed: int) -> list[tuple[str, str]]:
    """``n`` distinct (English, Turkish) pairs, drawn with ``random.Random(seed)`` only.

    A pair is kept only if neither its English nor its Turkish side occurred before, so any
    split of the list has disjoint sources and disjoint targets. The list for ``n`` is a prefix
    of the list for any larger ``n`` with the same seed.
    """
    rng = random.Random(seed)
    pairs: list[tuple[str, str]] = []
    seen_en: set[str] = set()
    seen_tr: set[str] = set()
    attempts = 0
    while len(pairs) < n:
        attempts += 1
        if attempts > 20 * n + 1000:
            raise ValueError(f"the grammar cannot produce {n} distinct pairs (got {len(pairs)})")
        english, turkish = sample_pair(rng)
        if english in seen_en or turkish in seen_tr:
            continue
        seen_en.add(english)
        seen_tr.add(turkish)
        pairs.append((english, turkish))
    return pairs


SPLITS = ("train", "valid", "test")


def write_corpus(
    out_dir: str | Path, n_train: int, n_valid: int, n_test: int, seed: int
) -> dict[str, int]:
    """Write ``{train,valid,test}.{en,tr}`` (UTF-8, one sentence a line) and return the counts.

    Valid and test are taken first from the stream, so they stay the same for a seed whatever
    the size of train.
    """
    pairs = generate_corpus(n_valid + n_test + n_train, seed)
    splits = {
        "valid": pairs[:n_valid],
        "test": pairs[n_valid : n_valid + n_test],
        "train": pairs[n_valid + n_test :],
    }
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for split in SPLITS:
        for side, lang in enumerate(("en", "tr")):
            lines = "".join(pair[side] + "\n" for pair in splits[split])
            (out / f"{split}.{lang}").write_text(lines, encoding="utf-8")
    return {split: len(splits[split]) for split in SPLITS}


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(
        description="Write the synthetic English→Turkish demo corpus (train/valid/test .en/.tr)."
    )
    parser.add_argument("--out-dir", required=True, help="directory for the six text files")
    parser.add_argument("--train", type=int, default=20000, help="training pairs")
    parser.add_argument("--valid", type=int, default=500, help="validation pairs")
    parser.add_argument("--test", type=int, default=500, help="test pairs")
    parser.add_argument("--seed", type=int, default=1, help="seed of random.Random")
    args = parser.parse_args(argv)
    counts = write_corpus(args.out_dir, args.train, args.valid, args.test, args.seed)
    summary = ", ".join(f"{split} {count}" for split, count in counts.items())
    print(f"wrote {summary} sentence pairs (seed {args.seed}) to {args.out_dir}")


if __name__ == "__main__":
    from fairseq_struct.cli_logging import configure_logging

    configure_logging()
    main()
