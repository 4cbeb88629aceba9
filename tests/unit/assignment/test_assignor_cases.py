"""The 24 Java-computed assignor cases and the 7-round convergence run (expected values from Java)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from streamlet.assignment.api import ApplicationState, TaskInfo
from streamlet.assignment.client_state import LATEST_OFFSET, ClientState
from streamlet.assignment.high_availability import HighAvailabilityTaskAssignor, assign_clients
from streamlet.task_id import TaskId
from tests.unit.assignment.research_cases import (
    as_strings,
    client_states_for,
    configs_of,
    research,
    run_pipeline,
    tasks,
)

CASES = research()["assignor_cases"]


def _ids(case: dict[str, Any]) -> str:
    return str(case["name"].split(" ")[0])


def test_all_24_cases_are_loaded() -> None:
    assert len(CASES) == 24
    assert {c["mode"] for c in CASES} == {"lags_given", "full_pipeline"}


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_client_level_assignment_matches_java(case: dict[str, Any]) -> None:
    expected = case["expected_from_java"]
    result = run_pipeline(case)
    got = {
        str(pid): {"active": as_strings(c.active_tasks), "standby": as_strings(c.standby_tasks)}
        for pid, c in result.clients.items()
    }
    want = {
        pid: {"active": sorted(c.get("active", [])), "standby": sorted(c.get("standby", []))}
        for pid, c in expected["clients"].items()
    }
    assert got == want
    assert result.probing == expected["probing_rebalance_needed"]


@pytest.mark.parametrize("case", [c for c in CASES if c["mode"] == "full_pipeline"], ids=_ids)
def test_per_consumer_assignment_and_pending_revocations_match_java(case: dict[str, Any]) -> None:
    result = run_pipeline(case)
    for pid_text, expected_client in case["expected_from_java"]["clients"].items():
        got = result.consumers[uuid.UUID(pid_text)]
        assert set(got) == set(expected_client["consumers"])
        for member, want in expected_client["consumers"].items():
            assert as_strings(got[member].active) == sorted(want["active"]), member
            assert as_strings(got[member].standby) == sorted(want["standby"]), member
            assert as_strings(got[member].pending_revocation) == sorted(want["pending_revocation"]), member


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_kip924_api_gives_the_same_result(case: dict[str, Any]) -> None:
    """HighAvailabilityTaskAssignor.assign(ApplicationState) == the internal assign_clients path."""
    clients, _ = client_states_for(case)
    stateful = tasks(case["stateful_tasks"])
    infos = [TaskInfo(t, True) for t in stateful] + [TaskInfo(t, False) for t in tasks(case["stateless_tasks"])]
    configs = configs_of(case["config"])
    state = ApplicationState(infos, configs, clients, now_ms=1_000)
    result = HighAvailabilityTaskAssignor().assign(state)
    expected = case["expected_from_java"]
    got = {str(a.process_id): (as_strings(a.active_tasks()), as_strings(a.standby_tasks())) for a in result.assignment}
    want = {pid: (sorted(c.get("active", [])), sorted(c.get("standby", []))) for pid, c in expected["clients"].items()}
    assert got == want
    deadline = 1_000 + configs.probing_rebalance_interval_ms if expected["probing_rebalance_needed"] else None
    assert {a.followup_rebalance_deadline for a in result.assignment} == {deadline}


def test_signed_uuid_order_decides_the_round_robin() -> None:
    """Case H: 80000000-... sorts first in Java, so it gets the extra task (Python UUID order would not)."""
    case = next(c for c in CASES if c["name"].startswith("H_"))
    result = run_pipeline(case)
    first = uuid.UUID("80000000-0000-0000-0000-000000000000")
    assert len(result.clients[first].active_tasks) == 2
    assert list(result.clients) != sorted(result.clients)  # the case would not catch unsigned ordering otherwise


# ---- convergence ---------------------------------------------------------------------------------------------

CONVERGENCE = research()["convergence"]
END_OFFSET_SUM = 1_000_000  # "end offset sum 1e6 each" (setup text)
ALL_12 = [TaskId(s, p) for s in (0, 1) for p in range(6)]


def _pid(n: int) -> uuid.UUID:
    return uuid.UUID(int=n)


def _clients_from(assignment: dict[uuid.UUID, tuple[list[TaskId], list[TaskId]]]) -> dict[uuid.UUID, ClientState]:
    """Round model: actives report -2 (running), standbys/warmups report offset == end (lag 0), rest nothing."""
    clients = {}
    for pid, (active, standby) in assignment.items():
        sums = {t: LATEST_OFFSET for t in active} | {t: END_OFFSET_SUM for t in standby}
        state = ClientState()
        state.add_consumer(f"{pid}-t1", sums)
        state.compute_task_lags(dict.fromkeys(ALL_12, END_OFFSET_SUM))
        clients[pid] = state
    return clients


def _initial_layout() -> dict[uuid.UUID, tuple[list[TaskId], list[TaskId]]]:
    # Transcribed from CONVERGENCE["setup"]: PID_1 runs 0_0..0_3 with standbys 0_4..1_1; PID_2 runs 0_4..1_1
    # with standbys 1_2..1_5; PID_3 runs 1_2..1_5 with standbys 0_0..0_3; new PID_4 has nothing.
    assert "PID_1 runs 0_0..0_3 with standbys 0_4..1_1" in CONVERGENCE["setup"]
    first, second, third = ALL_12[0:4], ALL_12[4:8], ALL_12[8:12]
    return {_pid(1): (first, second), _pid(2): (second, third), _pid(3): (third, first), _pid(4): ([], [])}


def test_convergence_rounds_match_java() -> None:
    configs = configs_of(CONVERGENCE["config"])
    layout = _initial_layout()
    rounds = CONVERGENCE["rounds"]
    assert len(rounds) == 7
    for expected in rounds:
        clients = _clients_from(layout)
        probing = assign_clients(clients, ALL_12, ALL_12, configs)
        got = {
            str(pid): {"active": as_strings(c.active_tasks), "standby": as_strings(c.standby_tasks)}
            for pid, c in clients.items()
        }
        assert got == expected["assignment"], f"round {expected['round']}"
        assert probing == expected["probing"], f"round {expected['round']}"
        # next round starts from Java's assignment of this round, so one mismatch cannot cascade
        layout = {
            uuid.UUID(pid): (tasks(a["active"]), tasks(a["standby"])) for pid, a in expected["assignment"].items()
        }
