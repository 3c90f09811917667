"""`ForkedHelpers`: this process and helpers forked once map functions over batches together.

Unlike `multiprocessing.Pool`, the caller works too, taking batches from the same shared counter,
and the helpers are forked once per context and serve every later `map` and `call`: every process
keeps its warm caches, and a fork's copy-on-write faults are paid once. After the fork, helpers
learn only what is sent to them, pickled: the functions (by name) and their batches or arguments.
"""

import gc
import multiprocessing
import pickle
import queue
import traceback
from types import TracebackType
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Type, TypeVar

from fairseq_struct.morph.collector import collector_paused

Batch = TypeVar("Batch")
Result = TypeVar("Result")

# How long the caller waits for a helper's message before checking that the helpers still live.
_POLL_S = 1.0
# What a helper is asked to do (the first item of a message in its inbox).
_MAP, _CALL = "map", "call"
# In place of a batch index in a helper's message: it has finished the round, or it failed.
_ROUND_ENDED, _FAILED = -1, -2


class _Failure:
    """An exception raised in a helper, as the caller re-raises it."""

    def __init__(self, error: BaseException) -> None:
        try:
            pickle.dumps(error)
            self.error = error
        except Exception:  # an exception that cannot be pickled: keep its text
            self.error = RuntimeError(f"{type(error).__name__}: {error}")
        self.traceback = traceback.format_exc()


class ForkedHelpers:
    """This process (number 0) and `processes - 1` helpers (1, 2, ...) forked on entering.

    With `processes` = 1 there are no helpers and everything runs here. Otherwise the fork
    start method must be available (the caller checks, and works alone without it). An
    exception in a helper is raised here by the next `map` (or on leaving the context); a
    helper that dies without one makes `map` raise a RuntimeError instead of waiting forever.
    Leaving the context with an exception, or while a `map` is unfinished, kills the helpers.
    """

    def __init__(self, processes: int) -> None:
        self.processes = processes
        self._helpers: List[Any] = []
        self._inboxes: List[Any] = []
        self._round_ended = 0
        self._in_round = False  # a `map` over the helpers has started and not finished

    def __enter__(self) -> "ForkedHelpers":
        if self.processes < 2:
            return self
        context = multiprocessing.get_context("fork")
        self._next_batch = context.Value("q", 0)
        self._results = context.Queue()
        # Objects alive now are never collected by the helpers' garbage collector: it would touch
        # them all (Zemberek's lexicon is millions of objects) and copy every page they are on.
        gc.freeze()
        for number in range(1, self.processes):
            inbox = context.Queue()
            helper = context.Process(
                target=_serve, args=(number, inbox, self._next_batch, self._results), daemon=True
            )
            helper.start()
            self._helpers.append(helper)
            self._inboxes.append(inbox)
        return self

    def __exit__(
        self,
        error_type: Optional[Type[BaseException]],
        error: Optional[BaseException],
        trace: Optional[TracebackType],
    ) -> None:
        try:
            if self._helpers and error_type is None and not self._in_round:
                for inbox in self._inboxes:
                    inbox.put(None)
                for helper in self._helpers:
                    helper.join()  # reaped helpers count in this process's RUSAGE_CHILDREN
                self._receive({}, block=False)  # a `call` that failed after the last `map`
        finally:
            for helper in self._helpers:
                if helper.is_alive():  # this process failed, or a helper did
                    helper.terminate()
                    helper.join()

    def map(
        self, function: Callable[[Batch], Result], batches: Sequence[Batch]
    ) -> Iterator[Tuple[int, Result]]:
        """(number of the process that computed it, `function(batch)`) for each of `batches`,
        in order. Consume it to the end before the next `map`."""
        if not self._helpers or len(batches) < 2:
            for batch in batches:
                yield 0, function(batch)
            return
        # every helper ended the previous round: none can take from the counter now
        self._next_batch.value = 0
        self._round_ended = 0
        self._in_round = True
        for inbox in self._inboxes:
            inbox.put((_MAP, function, batches))
        done: Dict[int, Tuple[int, Result]] = {}
        yielded = 0
        while True:
            index = _take(self._next_batch, len(batches))
            if index is None:
                break
            done[index] = (0, function(batches[index]))
            self._receive(done, block=False)
            while yielded in done:
                yield done.pop(yielded)
                yielded += 1
        while yielded < len(batches) or self._round_ended < len(self._helpers):
            if yielded in done:
                yield done.pop(yielded)
                yielded += 1
            elif not self._receive(done, block=True):
                self._check_alive(done)
        self._in_round = False

    def call(self, helper: int, function: Callable[[Any], Any], argument: Any) -> None:
        """Run `function(argument)` in helper number `helper`, before anything sent to it later
        (this process does not wait for it)."""
        self._inboxes[helper - 1].put((_CALL, function, argument))

    def _receive(self, done: Dict[int, Tuple[int, Any]], block: bool) -> bool:
        """Move the helpers' results that have arrived into `done` and count the helpers that
        ended the round (waiting a while for a message if `block`); re-raise a helper's
        exception. False if nothing arrived."""
        received = False
        while True:
            try:
                with collector_paused():  # unpickling makes many objects at once
                    number, index, result = self._results.get(
                        block=block and not received, timeout=_POLL_S
                    )
            except queue.Empty:
                return received
            received = True
            if index == _FAILED:
                raise result.error from RuntimeError(
                    f"in forked helper {number}:\n{result.traceback}"
                )
            if index == _ROUND_ENDED:
                self._round_ended += 1
            else:
                done[index] = (number, result)

    def _check_alive(self, done: Dict[int, Tuple[int, Any]]) -> None:
        """Raise if a helper has ended in the middle of a round: what it took is lost."""
        if any(not helper.is_alive() for helper in self._helpers):
            # a helper's queue is flushed before it ends: what it sent last may only be read now
            if not self._receive(done, block=False):
                codes = [helper.exitcode for helper in self._helpers]
                raise RuntimeError(
                    f"a forked helper process ended (exit codes {codes}) before sending all "
                    "its results"
                )


def shrinking_batches(
    items: Sequence[Batch], processes: int, largest: int, smallest: int
) -> List[Sequence[Batch]]:
    """`items` cut into consecutive batches for `ForkedHelpers.map` that shrink towards the end.

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


def _serve(
    number: int,
    inbox: "multiprocessing.Queue[Any]",
    next_batch: Any,
    results: "multiprocessing.Queue[Any]",
) -> None:
    """A helper's life: do what comes in its inbox until told to stop (None)."""
    while True:
        with collector_paused():  # unpickling makes many objects at once
            message = inbox.get()
        if message is None:
            return
        kind, function, argument = message
        try:
            if kind == _CALL:
                function(argument)
                continue
            while True:
                index = _take(next_batch, len(argument))
                if index is None:
                    break
                results.put((number, index, function(argument[index])))
            results.put((number, _ROUND_ENDED, None))
        except Exception as error:
            results.put((number, _FAILED, _Failure(error)))
            return
