"""The synthetic English→Turkish demo corpus: Turkish morphology by rule, seeded, split cleanly."""

import random
from pathlib import Path
from typing import Optional

import pytest

from fairseq_struct.demo_data.synthetic_en_tr import (
    VERBS,
    Case,
    Person,
    Stem,
    Tense,
    capitalize_tr,
    conjugate,
    generate_corpus,
    harmony_2,
    harmony_4,
    inflect_noun,
    main,
    sample_pair,
    soften,
    softens_by_default,
    write_corpus,
)

VERB = {verb.tr: verb for verb in VERBS}


def noun(
    word: str, plural: bool = False, possessor: Optional[Person] = None, case: Case = Case.NOM
) -> str:
    return inflect_noun(Stem(word, softens_by_default(word)), plural, possessor, case)


def verb(
    word: str, tense: Tense, person: Person, negative: bool = False, question: bool = False
) -> str:
    return " ".join(conjugate(VERB[word], tense, person, negative, question))


def test_vowel_harmony_is_two_way_and_four_way():
    assert [harmony_2(word) for word in ("kitap", "okul", "ev", "göz")] == ["a", "a", "e", "e"]
    assert [harmony_4(word) for word in ("kız", "okul", "ev", "göz")] == ["ı", "u", "i", "ü"]


def test_final_stops_soften_before_a_vowel():
    assert noun("kitap", case=Case.ACC) == "kitabı"
    assert noun("ağaç", case=Case.DAT) == "ağaca"
    assert noun("köpek", case=Case.ACC) == "köpeği"
    assert noun("armut", possessor=Person.P1SG) == "armudum"
    assert soften("renk") == "reng"


def test_monosyllables_and_consonant_suffixes_do_not_soften():
    assert noun("süt", case=Case.ACC) == "sütü"
    assert noun("top", case=Case.DAT) == "topa"
    assert noun("kitap", plural=True) == "kitaplar"


def test_suffix_initial_d_devoices_after_voiceless_consonants():
    assert noun("kitap", case=Case.LOC) == "kitapta"
    assert noun("ağaç", case=Case.ABL) == "ağaçtan"
    assert noun("göz", case=Case.ABL) == "gözden"
    assert noun("ev", plural=True, case=Case.LOC) == "evlerde"
    assert verb("git", Tense.PAST, Person.P3SG) == "gitti"


def test_buffer_consonants_y_s_and_pronominal_n():
    assert noun("araba", case=Case.ACC) == "arabayı"
    assert noun("araba", case=Case.DAT) == "arabaya"
    assert noun("araba", possessor=Person.P3SG) == "arabası"
    assert noun("araba", possessor=Person.P3SG, case=Case.DAT) == "arabasına"
    assert noun("kitap", possessor=Person.P3SG, case=Case.LOC) == "kitabında"


def test_possessives():
    persons = (Person.P1SG, Person.P2SG, Person.P3SG, Person.P1PL)
    forms = [noun("kitap", possessor=person) for person in persons]
    assert forms == ["kitabım", "kitabın", "kitabı", "kitabımız"]
    assert noun("oda", possessor=Person.P2SG, case=Case.LOC) == "odanda"
    assert noun("kitap", plural=True, possessor=Person.P1SG, case=Case.ACC) == "kitaplarımı"
    assert noun("ev", plural=True, possessor=Person.P1PL, case=Case.ABL) == "evlerimizden"


def test_person_agreement_in_all_six_persons():
    past = [verb("gel", Tense.PAST, person) for person in Person]
    assert past == ["geldim", "geldin", "geldi", "geldik", "geldiniz", "geldiler"]
    progressive = [verb("gel", Tense.PROGRESSIVE, person) for person in Person]
    assert progressive == [
        "geliyorum",
        "geliyorsun",
        "geliyor",
        "geliyoruz",
        "geliyorsunuz",
        "geliyorlar",
    ]
    future = [verb("oku", Tense.FUTURE, person) for person in Person]
    assert future == [
        "okuyacağım",
        "okuyacaksın",
        "okuyacak",
        "okuyacağız",
        "okuyacaksınız",
        "okuyacaklar",
    ]


def test_tense_negation_and_stem_alternations():
    assert verb("gel", Tense.FUTURE, Person.P1SG) == "geleceğim"
    assert verb("git", Tense.PROGRESSIVE, Person.P3SG) == "gidiyor"
    assert verb("oku", Tense.PAST, Person.P1PL, negative=True) == "okumadık"
    assert verb("gel", Tense.PROGRESSIVE, Person.P3SG, negative=True) == "gelmiyor"
    assert verb("gel", Tense.FUTURE, Person.P3SG, negative=True) == "gelmeyecek"
    assert verb("bekle", Tense.PROGRESSIVE, Person.P1SG) == "bekliyorum"
    assert verb("ara", Tense.PROGRESSIVE, Person.P3SG) == "arıyor"
    assert verb("boya", Tense.PROGRESSIVE, Person.P3SG) == "boyuyor"
    assert verb("ye", Tense.PROGRESSIVE, Person.P3SG) == "yiyor"
    assert verb("ye", Tense.FUTURE, Person.P1SG) == "yiyeceğim"
    assert verb("ye", Tense.FUTURE, Person.P1SG, negative=True) == "yemeyeceğim"
    assert verb("tamir et", Tense.FUTURE, Person.P1PL) == "tamir edeceğiz"


def test_question_particle_carries_the_person_where_turkish_puts_it():
    assert verb("gel", Tense.PROGRESSIVE, Person.P2SG, question=True) == "geliyor musun"
    assert verb("gel", Tense.PAST, Person.P2SG, question=True) == "geldin mi"
    assert verb("gel", Tense.FUTURE, Person.P2SG, question=True) == "gelecek misin"
    assert verb("oku", Tense.FUTURE, Person.P1SG, question=True) == "okuyacak mıyım"
    assert verb("yaz", Tense.PAST, Person.P1PL, negative=True, question=True) == "yazmadık mı"
    assert verb("gel", Tense.PROGRESSIVE, Person.P3PL, question=True) == "geliyorlar mı"
    assert verb("gel", Tense.PROGRESSIVE, Person.P2PL, question=True) == "geliyor musunuz"


def test_first_word_is_capitalised_with_turkish_casing():
    assert capitalize_tr("iniyorum.") == "İniyorum."
    assert capitalize_tr("ısınıyor.") == "Isınıyor."
    assert capitalize_tr("kitabımı okudum.") == "Kitabımı okudum."


def test_sentences_are_short_and_punctuated_like_natural_text():
    for english, turkish in generate_corpus(2000, seed=7):
        assert english.endswith("?") == turkish.endswith("?")
        assert english[-1] in ".?" and turkish[-1] in ".?"
        assert " ." not in turkish and " ?" not in turkish
        assert turkish[0].isupper() and english[0].isupper()
        assert 1 <= len(turkish.split()) <= 10


def test_each_english_sentence_has_one_turkish_translation():
    rng = random.Random(3)
    translation: dict[str, str] = {}
    for _ in range(20000):
        english, turkish = sample_pair(rng)
        assert translation.setdefault(english, turkish) == turkish


def test_grammar_yields_more_than_twenty_thousand_distinct_pairs():
    pairs = generate_corpus(21000, seed=1)
    assert len({english for english, _ in pairs}) == 21000
    assert len({turkish for _, turkish in pairs}) == 21000


def read_splits(out_dir: Path) -> dict[str, list[str]]:
    return {
        path.name: path.read_text(encoding="utf-8").splitlines()
        for path in sorted(out_dir.iterdir())
    }


def test_same_seed_writes_byte_identical_files(tmp_path):
    write_corpus(tmp_path / "a", 300, 50, 50, seed=1)
    write_corpus(tmp_path / "b", 300, 50, 50, seed=1)
    write_corpus(tmp_path / "c", 300, 50, 50, seed=2)
    for name in ("train.en", "train.tr", "valid.tr", "test.tr"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert (tmp_path / "a" / "train.tr").read_bytes() != (tmp_path / "c" / "train.tr").read_bytes()


def test_splits_are_line_aligned_counted_and_disjoint(tmp_path):
    counts = write_corpus(tmp_path, 400, 60, 70, seed=1)
    assert counts == {"train": 400, "valid": 60, "test": 70}
    files = read_splits(tmp_path)
    for split, n in counts.items():
        assert len(files[f"{split}.en"]) == len(files[f"{split}.tr"]) == n
    for lang in ("en", "tr"):
        train = set(files[f"train.{lang}"])
        assert not train & set(files[f"valid.{lang}"])
        assert not train & set(files[f"test.{lang}"])
        assert not set(files[f"valid.{lang}"]) & set(files[f"test.{lang}"])


def test_valid_and_test_do_not_depend_on_the_size_of_train(tmp_path):
    write_corpus(tmp_path / "small", 100, 30, 30, seed=4)
    write_corpus(tmp_path / "large", 900, 30, 30, seed=4)
    for name in ("valid.en", "valid.tr", "test.en", "test.tr"):
        small = (tmp_path / "small" / name).read_bytes()
        assert small == (tmp_path / "large" / name).read_bytes()


def test_cli_writes_the_six_files(tmp_path, capsys):
    main(["--out-dir", str(tmp_path), "--train", "20", "--valid", "5", "--test", "5"])
    assert sorted(read_splits(tmp_path)) == [
        "test.en",
        "test.tr",
        "train.en",
        "train.tr",
        "valid.en",
        "valid.tr",
    ]
    assert "train 20" in capsys.readouterr().out


@pytest.fixture(scope="module")
def morphology():
    pytest.importorskip("zemberek", reason="zemberek-python is not installed")
    from fairseq_struct.morph.zemberek.loading import load_morphology

    return load_morphology()


def test_zemberek_recognises_at_least_97_percent_of_turkish_tokens(morphology):
    from fairseq_struct.eval.zemberek_coverage import measure_coverage

    turkish = [pair[1] for pair in generate_corpus(2000, seed=11)]
    coverage = measure_coverage(turkish, morphology)
    assert coverage.word_tokens > 5000
    assert coverage.share >= 0.97, coverage.top_unknown


def test_zemberek_coverage_rejects_misspelt_and_guessed_words(morphology):
    from fairseq_struct.eval.zemberek_coverage import measure_coverage

    # no devoicing (kitapda), no harmony (evlar), and a name Zemberek only guesses (Tarvok'un)
    coverage = measure_coverage(["Kitabı okudum .", "kitapda evlar Tarvok'un ?"], morphology)
    assert (coverage.word_tokens, coverage.recognised_tokens) == (5, 2)
    assert coverage.punctuation_tokens == 2
    assert {word for word, _ in coverage.top_unknown} == {"kitapda", "evlar", "Tarvok'un"}
