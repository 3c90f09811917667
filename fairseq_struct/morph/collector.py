"""`collector_paused`: no cyclic garbage collection while a batch of work runs.

The segmenters' batches allocate many long-lived objects, and each collection would traverse
every tracked object, Zemberek's lexicon of millions included. Cycles made during a batch are
collected after it.
"""

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector inside the block (if it was running)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
