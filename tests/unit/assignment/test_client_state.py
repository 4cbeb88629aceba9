"""Lag computation and previous-task derivation (spec §5.2, §5.3; ClientState.computeTaskLags)."""

from __future__ import annotations

import pytest

from streamlet.assignment.client_state import (
    LATEST_OFFSET,
    LONG_MAX,
    UNKNOWN_OFFSET_SUM,
    ClientState,
    compute_task_lag,
    end_offset_sum,
)
from streamlet.errors import TaskAssignmentError
from streamlet.task_id import TaskId

T0, T1, T2, T3, T4 = (TaskId(1, p) for p in range(5))


@pytest.mark.parametrize(
    ("reported", "end", "lag"),
    [
        (None, 100, 100),  # no local state: the whole end sum
        (LATEST_OFFSET, 100, LATEST_OFFSET),  # running active
        (UNKNOWN_OFFSET_SUM, 100, UNKNOWN_OFFSET_SUM),
        (40, 100, 60),
        (100, 100, 0),
        (150, 100, 100),  # beyond the end (reset/corrupted changelog): treated as no state
        (0, 0, 0),
    ],
)
def test_compute_task_lag(reported: int | None, end: int, lag: int) -> None:
    assert compute_task_lag(reported, end) == lag


def test_end_offset_sums_pin_to_long_max() -> None:
    assert end_offset_sum([LONG_MAX, 1]) == LONG_MAX
    assert end_offset_sum([3, 4]) == 7


def test_client_lags_previous_tasks_and_prev_tasks_by_lag() -> None:
    state = ClientState()
    state.add_consumer("b-thread", {T0: LATEST_OFFSET, T1: 10}, owned_partitions=[("src", 0)])
    state.add_consumer("a-thread", {T2: 95, T3: 200})
    state.initialize_prev_tasks({("src", 0): T0, ("src", 4): T4})
    state.compute_task_lags({T0: 50, T1: 100, T2: 100, T3: 100, T4: 7})

    assert state.capacity == 2
    assert state.task_lags == {T0: LATEST_OFFSET, T1: 90, T2: 5, T3: 100, T4: 7}
    assert state.previous_active_tasks == {T0}
    assert state.previous_standby_tasks == {T1, T2, T3}
    assert state.prev_tasks_by_lag("b-thread") == [T0, T1]
    assert state.prev_tasks_by_lag("a-thread") == [T2, T3]
    assert state.prev_tasks_by_lag("unknown") == []
    with pytest.raises(TaskAssignmentError, match="not a stateful task"):
        state.lag_for(TaskId(0, 0))


def test_a_client_never_holds_a_task_twice() -> None:
    state = ClientState(2)
    state.assign_active(T0)
    with pytest.raises(TaskAssignmentError):
        state.assign_standby(T0)
    with pytest.raises(TaskAssignmentError):
        state.unassign_standby(T0)
    state.assign_standby(T1)
    assert (state.assigned_task_load, state.active_task_load) == (1.0, 0.5)
