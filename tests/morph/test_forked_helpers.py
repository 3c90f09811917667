import os
import time

import pytest

from fairseq_struct.morph.forked_helpers import ForkedHelpers, shrinking_batches

CALLER = os.getpid()
# batches each process worked on, in its own copy of this list (helpers inherit it empty)
worked_here: list = []
# what `remember` was sent, per process
remembered: list = []


def slow_square(batch: int) -> tuple:
    time.sleep(0.05)  # long enough that the caller and its helpers all take batches
    worked_here.append(batch)
    return batch * batch, os.getpid()


def test_results_come_in_order_from_the_caller_and_its_helpers():
    worked_here.clear()
    with ForkedHelpers(3) as helpers:
        results = list(helpers.map(slow_square, list(range(12))))
    assert [square for _, (square, _) in results] == [n * n for n in range(12)]
    pids = {pid for _, (_, pid) in results}
    assert CALLER in pids and len(pids) > 1
    # each result says which process computed it: 0 is this one
    assert all((by == 0) == (pid == CALLER) for by, (_, pid) in results)
    # what the caller computed stayed in its own state
    assert sorted(worked_here) == [n for n, (by, _) in enumerate(results) if by == 0]


def work_count(batch: int) -> tuple:
    time.sleep(0.05)
    worked_here.append(batch)
    return os.getpid(), len(worked_here), list(remembered)


def remember(item: str) -> None:
    remembered.append(item)


def test_helpers_live_across_maps_and_get_what_is_sent_to_them():
    worked_here.clear()
    remembered.clear()
    with ForkedHelpers(2) as helpers:
        first = list(helpers.map(work_count, list(range(8))))
        helpers.call(1, remember, "sent to helper 1")
        second = list(helpers.map(work_count, list(range(8))))
    helper_pids = {pid for by, (pid, _, _) in first + second if by == 1}
    assert len(helper_pids) == 1  # forked once, not per map
    # a helper's count of batches goes on from the first map to the second
    first_count = max(count for by, (_, count, _) in first if by == 1)
    assert all(count > first_count for by, (_, count, _) in second if by == 1)
    # the call reached the helper before the second map; this process got nothing
    assert all(seen == ["sent to helper 1"] for by, (_, _, seen) in second if by == 1)
    assert all(seen == [] for by, (_, _, seen) in second if by == 0)
    assert remembered == []


def test_one_process_works_alone():
    with ForkedHelpers(1) as helpers:
        assert list(helpers.map(slow_square, [1, 2, 3])) == [
            (0, (1, CALLER)),
            (0, (4, CALLER)),
            (0, (9, CALLER)),
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
        with ForkedHelpers(2) as helpers:
            list(helpers.map(fail_in_helpers, list(range(8))))
    assert "in forked helper 1" in str(raised.value.__cause__)


def test_an_exception_that_cannot_be_pickled_comes_back_as_its_text():
    with pytest.raises(RuntimeError, match="UnpicklableError: odd failure in batch"):
        with ForkedHelpers(2) as helpers:
            list(helpers.map(fail_unpicklably_in_helpers, list(range(8))))


def refuse(item: str) -> None:
    raise ValueError(f"cannot take {item}")


def test_a_failed_call_is_raised_by_the_next_map_or_on_leaving():
    with pytest.raises(ValueError, match="cannot take this"):
        with ForkedHelpers(2) as helpers:
            helpers.call(1, refuse, "this")
            list(helpers.map(slow_square, list(range(8))))
    with pytest.raises(ValueError, match="cannot take that"):
        with ForkedHelpers(2) as helpers:
            helpers.call(1, refuse, "that")


def die_in_helpers(batch: int) -> int:
    time.sleep(0.05)
    if os.getpid() != CALLER:
        os._exit(3)
    return batch


def test_a_helper_that_dies_is_reported_not_waited_for():
    with pytest.raises(RuntimeError, match=r"exit codes \[3\]"):
        with ForkedHelpers(2) as helpers:
            list(helpers.map(die_in_helpers, list(range(6))))


def test_leaving_in_the_middle_of_a_map_ends_the_helpers():
    with ForkedHelpers(2) as helpers:
        results = helpers.map(slow_square, list(range(40)))
        next(results)
        processes = list(helpers._helpers)
    assert all(not process.is_alive() for process in processes)


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
