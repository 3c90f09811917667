import os
import time

import pytest

from fairseq_struct.morph.forked_map import forked_map, shrinking_batches

CALLER = os.getpid()
# batches this process worked on (helpers append to their own copies)
worked_here: list = []


def slow_square(batch: int) -> tuple:
    time.sleep(0.05)  # long enough that the caller and its helpers all take batches
    worked_here.append(batch)
    return batch * batch, os.getpid()


def test_results_come_in_order_from_the_caller_and_its_helpers():
    worked_here.clear()
    results = list(forked_map(slow_square, list(range(12)), processes=3))
    assert [square for square, _ in results] == [n * n for n in range(12)]
    pids = {pid for _, pid in results}
    assert CALLER in pids and len(pids) > 1
    # what the caller computed stayed in its own state
    assert sorted(worked_here) == [n for n, (_, pid) in enumerate(results) if pid == CALLER]


def test_one_process_works_alone():
    assert list(forked_map(slow_square, [1, 2, 3], processes=1)) == [
        (1, CALLER),
        (4, CALLER),
        (9, CALLER),
    ]


class UnpicklableError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.callback = lambda: None  # pickle refuses lambdas


def fail_in_helpers(batch: int) -> int:
    time.sleep(0.05)
    if os.getpid() != CALLER:
        raise ValueError(f"bad batch {batch}")
    return batch


def fail_unpicklably_in_helpers(batch: int) -> int:
    time.sleep(0.05)
    if os.getpid() != CALLER:
        raise UnpicklableError(f"odd failure in batch {batch}")
    return batch


def test_an_exception_in_a_helper_is_raised_in_the_caller():
    with pytest.raises(ValueError, match="bad batch") as raised:
        list(forked_map(fail_in_helpers, list(range(8)), processes=2))
    assert "in a forked helper" in str(raised.value.__cause__)


def test_an_exception_that_cannot_be_pickled_comes_back_as_its_text():
    with pytest.raises(RuntimeError, match="UnpicklableError: odd failure in batch"):
        list(forked_map(fail_unpicklably_in_helpers, list(range(8)), processes=2))


def die_in_helpers(batch: int) -> int:
    time.sleep(0.05)
    if os.getpid() != CALLER:
        os._exit(3)
    return batch


def test_a_helper_that_dies_is_reported_not_waited_for():
    with pytest.raises(RuntimeError, match=r"exit codes \[3\]"):
        list(forked_map(die_in_helpers, list(range(6)), processes=2))


def test_batches_shrink_towards_the_end_and_cover_every_item_in_order():
    items = list(range(10_000))
    batches = shrinking_batches(items, processes=2, largest=500, smallest=25)
    assert [item for batch in batches for item in batch] == items
    sizes = [len(batch) for batch in batches]
    assert sizes[0] == 500 and sizes == sorted(sizes, reverse=True)
    assert min(sizes[:-1]) == 25  # the last batch takes what is left
    # each batch is at most an eighth of what was left before it (4 x 2 processes)
    left = len(items)
    for size in sizes:
        assert size <= max(25, left // 8)
        left -= size
