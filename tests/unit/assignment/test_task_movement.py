"""The 6 hand-transcribed TaskMovementTest cases: unit-level `assignActiveTaskMovements` calls.

Inputs (explicit caught-up sets and lag orders) and expectations come from Kafka Streams' TaskMovementTest
via the research JSON. All capacities are 1; PID_n = new UUID(0, n).
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

from streamlet.assignment.client_state import ClientState
from streamlet.assignment.high_availability import WarmupBudget, assign_active_task_movements
from streamlet.task_id import TaskId
from tests.unit.assignment.research_cases import as_strings, research, tasks

TM_CASES = research()["hand_transcribed_TaskMovementTest_cases"]
_BY_NAME = {c["name"]: c for c in TM_CASES}


def _pid(name: str) -> uuid.UUID:
    return uuid.UUID(int=int(name.removeprefix("PID_")))


def _pids(text: str) -> list[uuid.UUID]:
    return [_pid(p.strip()) for p in text.split(",") if p.strip()]


def _clients_of(case: dict[str, Any]) -> dict[str, Any]:
    clients = case["clients"]
    if isinstance(clients, str):  # "same as <other case>"
        clients = _BY_NAME[clients.removeprefix("same as ").strip()]
        return _clients_of(clients) | {"_source": clients}
    return {"clients": clients, "_source": case}


def _all_tasks(clients: dict[str, Any]) -> list[TaskId]:
    found: set[TaskId] = set()
    for raw in clients.values():
        found.update(tasks(raw.get("active")) + tasks(raw.get("standby_preassigned")))
        if isinstance(raw["lags"], dict):
            found.update(TaskId.parse(t) for t in raw["lags"])
    return sorted(found)


def _lags(raw: Any, all_tasks: list[TaskId]) -> dict[TaskId, int]:
    if isinstance(raw, dict):
        return {TaskId.parse(t): v for t, v in raw.items()}
    match = re.fullmatch(r"(-?\d+) for all( tasks)?", raw)
    assert match, raw
    return dict.fromkeys(all_tasks, int(match.group(1)))


def _per_task(raw: Any, all_tasks: list[TaskId], pattern: str) -> dict[TaskId, list[uuid.UUID]]:
    if isinstance(raw, dict):
        return {TaskId.parse(t): [_pid(p) for p in v] for t, v in raw.items()}
    match = re.fullmatch(pattern, raw)
    assert match, raw
    return dict.fromkeys(all_tasks, _pids(match.group(1)))


def test_all_six_cases_are_loaded() -> None:
    assert len(TM_CASES) == 6


@pytest.mark.parametrize("case", TM_CASES, ids=[c["name"] for c in TM_CASES])
def test_task_movement_case(case: dict[str, Any]) -> None:
    resolved = _clients_of(case)
    raw_clients, source = resolved["clients"], resolved["_source"]
    all_tasks = _all_tasks(raw_clients)
    clients: dict[uuid.UUID, ClientState] = {}
    for name, raw in raw_clients.items():
        state = ClientState(1, task_lags=_lags(raw["lags"], all_tasks))
        for task in tasks(raw.get("active")):
            state.assign_active(task)
        for task in tasks(raw.get("standby_preassigned")):
            state.assign_standby(task)
        clients[_pid(name)] = state
    before = {pid: (as_strings(c.active_tasks), as_strings(c.standby_tasks)) for pid, c in clients.items()}

    caught_up = {
        t: set(v) for t, v in _per_task(source["tasksToCaughtUpClients"], all_tasks, r"every task -> \{(.*)\}").items()
    }
    by_lag = _per_task(source["tasksToClientByLag"], all_tasks, r"every task -> \[(.*)\]")
    budget = WarmupBudget(case["max_warmup_replicas"])

    moves = assign_active_task_movements(caught_up, by_lag, clients, {}, budget)

    expected = case["expected"]
    assert moves == expected["returned_movements"]
    after = {pid: (as_strings(c.active_tasks), as_strings(c.standby_tasks)) for pid, c in clients.items()}
    if expected.get("assignment_unchanged"):
        assert after == before
    else:
        want = {_pid(n): (sorted(expected["active"][n]), sorted(expected["standby"][n])) for n in expected["active"]}
        assert after == want


def test_warmup_budget_decrements_past_zero_like_get_and_decrement() -> None:
    budget = WarmupBudget(1)
    assert [budget.take(), budget.take(), budget.take()] == [True, False, False]
    assert budget.remaining == -2
