"""`collector_paused`: no cyclic garbage collection while a batch of work runs.

The segmenters allocate many objects per batch that live on in their caches. Each time enough
of them accumulate, Python's cyclic collector traverses every tracked object, Zemberek's lexicon
of millions included, for nothing (benchmarks/README.md, bench_turkish_segmentation.py, has
what pausing it saves). Reference cycles made during a batch are collected after it, so memory
stays bounded.
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
