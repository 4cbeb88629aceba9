"""Per-thread distribution details not covered by the Java-computed full_pipeline cases."""

from __future__ import annotations

from streamlet.assignment.client_state import LATEST_OFFSET, LONG_MAX
from streamlet.assignment.thread_assignment import (
    distribute_tasks_to_threads,
    followup_rebalance_times,
    sorted_member_ids,
)
from streamlet.task_id import TaskId


def test_member_ids_sort_by_utf16_code_units_like_java() -> None:
    # U+FF5E (one UTF-16 unit 0xFF5E) sorts after U+1F600 (surrogates 0xD83D...) in Java, before it in Python
    assert sorted_member_ids(["\U0001f600", "\uff5e", "b", "a"]) == ["a", "b", "\U0001f600", "\uff5e"]


def test_followup_times_per_consumer() -> None:
    members = ["c2", "c1", "c3"]
    assert followup_rebalance_times(members, {}, 5_000) == {"c1": 5_000, "c2": LONG_MAX, "c3": LONG_MAX}
    assert followup_rebalance_times(members, {}, None) == {"c1": LONG_MAX, "c2": LONG_MAX, "c3": LONG_MAX}
    # a consumer with withheld tasks triggers an immediate rebalance and cancels the probing deadline after it
    pending = {"c2": [TaskId(0, 1)]}
    assert followup_rebalance_times(members, pending, 5_000) == {"c1": 5_000, "c2": 0, "c3": LONG_MAX}
    pending = {"c1": [TaskId(0, 1)], "c3": [TaskId(0, 2)]}
    assert followup_rebalance_times(members, pending, 5_000) == {"c1": 0, "c2": LONG_MAX, "c3": 0}


def test_threads_are_balanced_and_sticky_to_the_lowest_lag_reporter() -> None:
    stateful = [TaskId(1, p) for p in range(4)]
    reported = {"t-a": [TaskId(1, 3), TaskId(1, 2)], "t-b": [TaskId(1, 0)]}  # already (lag, task) ordered
    lags = {TaskId(1, 3): LATEST_OFFSET, TaskId(1, 2): 5, TaskId(1, 0): LATEST_OFFSET}
    assert all(lags[t] <= lags[u] for ts in reported.values() for t, u in zip(ts, ts[1:], strict=False))
    threads = distribute_tasks_to_threads(
        ["t-b", "t-a"], stateful + [TaskId(0, 0)], [], stateful, lambda m: reported.get(m, [])
    )
    assert list(threads) == ["t-a", "t-b"]
    assert threads["t-a"].active[:2] == [TaskId(1, 3), TaskId(1, 2)]
    assert threads["t-b"].active[0] == TaskId(1, 0)
    assert sorted(len(t.active) for t in threads.values()) == [2, 3]
