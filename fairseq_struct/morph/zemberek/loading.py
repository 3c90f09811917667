"""Importing zemberek-python and building its analyser, with the logging left as it was."""

import logging
import warnings
from typing import Any


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
            f"(SPEC section 1). Import failed with: {error}"
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


def load_morphology() -> Any:
    """Build Zemberek's `TurkishMorphology` (about 10 s); it cannot be pickled: one per process."""
    return import_zemberek().TurkishMorphology.create_with_defaults()
