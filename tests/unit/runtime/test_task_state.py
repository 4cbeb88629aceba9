"""Task states move only along Kafka Streams' table (`Task.State` in Task.java)."""

from __future__ import annotations

import itertools

import pytest

from streamlet.runtime.task_state import IllegalTaskStateTransition, TaskState, checked_transition

# Kafka's Task.java: CREATED(1, 3), RESTORING(2, 3), RUNNING(3), SUSPENDED(1, 4), CLOSED(0), by ordinal
KAFKA_ORDER = ["CREATED", "RESTORING", "RUNNING", "SUSPENDED", "CLOSED"]
KAFKA_VALID = {0: {1, 3}, 1: {2, 3}, 2: {3}, 3: {1, 4}, 4: {0}}


def _edges() -> list[tuple[TaskState, TaskState, bool]]:
    states = [TaskState[name] for name in KAFKA_ORDER]
    return [
        (a, b, KAFKA_ORDER.index(b.name) in KAFKA_VALID[KAFKA_ORDER.index(a.name)])
        for a, b in itertools.product(states, states)
    ]


def test_the_states_are_kafkas() -> None:
    assert [s.name for s in TaskState] == KAFKA_ORDER


@pytest.mark.parametrize(("current", "new", "valid"), _edges())
def test_every_transition_is_allowed_exactly_when_kafka_allows_it(
    current: TaskState, new: TaskState, valid: bool
) -> None:
    if valid:
        assert checked_transition("0_1", current, new) is new
    else:
        with pytest.raises(IllegalTaskStateTransition, match=f"task 0_1: invalid transition from {current.name} to"):
            checked_transition("0_1", current, new)
