"""`forked_map`: map a function over batches in this process and in forked helpers, in order.

Unlike `multiprocessing.Pool.imap`, the calling process works too, taking batches from the
same shared counter as its helpers. That matters for the segmenters, whose caches (analyser
tables, decoder memos) warm up as they work: the caller keeps everything it computed, and
helpers forked by a later call start with all of it, instead of every pool worker starting
from the caller's state of the first call. With `processes` = 2, half of the work also never
crosses a pipe.

Helpers are forked at the call, so `function` and `batches` reach them through the fork, not
pickled; only results (and errors) are. Each helper sends its results through a
`multiprocessing.Queue`, whose feeder thread lets the helper go on working while the caller
is busy with a batch of its own.
"""

import gc
import multiprocessing
import pickle
import queue
import traceback
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, TypeVar

from fairseq_struct.morph.collector import collector_paused

Batch = TypeVar("Batch")
Result = TypeVar("Result")

# How long the caller waits for a helper's result before checking that the helpers still live.
_POLL_S = 1.0


class _Failure:
    """An exception raised by `function` in a helper, as the caller re-raises it."""

    def __init__(self, error: BaseException) -> None:
        try:
            pickle.dumps(error)
            self.error = error
        except Exception:  # an exception that cannot be pickled: keep its text
            self.error = RuntimeError(f"{type(error).__name__}: {error}")
        self.traceback = traceback.format_exc()


def forked_map(
    function: Callable[[Batch], Result], batches: Sequence[Batch], processes: int
) -> Iterator[Result]:
    """`map(function, batches)` over this process and `processes - 1` forked helpers.

    Results come in the order of `batches`. An exception of `function` (here or in a helper)
    is raised here; a helper that dies without one raises a RuntimeError. The fork start
    method must be available (the caller checks, and works alone without it).
    """
    if processes < 2 or len(batches) < 2:
        yield from map(function, batches)
        return
    context = multiprocessing.get_context("fork")
    next_batch = context.Value("q", 0)
    results: "multiprocessing.Queue[Any]" = context.Queue()
    # Objects alive now are never collected by the helpers' garbage collector: it would touch
    # them all (Zemberek's lexicon is millions of objects) and copy every page they are on.
    gc.freeze()
    helpers = [
        context.Process(target=_help, args=(function, batches, next_batch, results), daemon=True)
        for _ in range(min(processes, len(batches)) - 1)
    ]
    done: Dict[int, Result] = {}
    yielded = 0
    try:
        for helper in helpers:
            helper.start()
        while True:
            index = _take(next_batch, len(batches))
            if index is None:
                break
            done[index] = function(batches[index])
            _receive(results, done, block=False)
            while yielded in done:
                yield done.pop(yielded)
                yielded += 1
        while yielded < len(batches):
            if yielded not in done and not _receive(results, done, block=True):
                _check_alive(helpers, results, done)
                continue
            yield done.pop(yielded)
            yielded += 1
        for helper in helpers:
            helper.join()  # reaped helpers count in this process's RUSAGE_CHILDREN CPU time
    finally:
        for helper in helpers:
            if helper.is_alive():  # this process failed, or a helper did
                helper.terminate()
                helper.join()


def shrinking_batches(
    items: Sequence[Batch], processes: int, largest: int, smallest: int
) -> List[Sequence[Batch]]:
    """`items` cut into consecutive batches for `forked_map` that shrink towards the end.

    Each batch is a 1 / (4 x `processes`) share of the items left, within [`smallest`,
    `largest`]: large batches while there is much to do (little overhead per batch), small ones
    at the end, so that the processes finish at nearly the same time instead of all waiting
    for the one with the last large batch.
    """
    batches = []
    at = 0
    while at < len(items):
        size = max(smallest, min(largest, (len(items) - at) // (4 * processes)))
        batches.append(items[at : at + size])
        at += size
    return batches


def _take(next_batch: Any, count: int) -> Optional[int]:
    """The index of the next batch nobody has taken, or None when all are taken."""
    with next_batch.get_lock():
        index = next_batch.value
        if index >= count:
            return None
        next_batch.value = index + 1
    return index


def _receive(results: "multiprocessing.Queue[Any]", done: Dict[int, Any], block: bool) -> bool:
    """Move the helpers' results that have arrived into `done` (waiting a while for one if
    `block`); re-raise a helper's exception. False if nothing arrived."""
    received = False
    while True:
        try:
            with collector_paused():  # unpickling makes many objects at once
                index, result = results.get(block=block and not received, timeout=_POLL_S)
        except queue.Empty:
            return received
        if isinstance(result, _Failure):
            raise result.error from RuntimeError(f"in a forked helper:\n{result.traceback}")
        done[index] = result
        received = True


def _check_alive(
    helpers: List[Any], results: "multiprocessing.Queue[Any]", done: Dict[int, Any]
) -> None:
    """Raise if every helper has ended and nothing more came: a result is lost for good."""
    if all(not helper.is_alive() for helper in helpers):
        # a helper's queue is flushed before it ends: what it sent last may only be read now
        if not _receive(results, done, block=False):
            codes = [helper.exitcode for helper in helpers]
            raise RuntimeError(
                f"forked helper processes ended (exit codes {codes}) before sending all results"
            )


def _help(
    function: Callable[[Any], Any],
    batches: Sequence[Any],
    next_batch: Any,
    results: "multiprocessing.Queue[Any]",
) -> None:
    """A helper's life: take batches until none is left, sending back each result."""
    while True:
        index = _take(next_batch, len(batches))
        if index is None:
            return
        try:
            result = function(batches[index])
        except Exception as error:
            results.put((index, _Failure(error)))
            return
        results.put((index, result))
