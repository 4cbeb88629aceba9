"""Seed 000's three rebalances through `simulate`, checked against the properties the cases list.

The properties are computed here from the case inputs, independently of streamlet's code (own lag and
signed-UUID arithmetic). `expected_seen_in_seed` is Kafka Streams 2.7.2's log; 3.3+ hands out warmups in
priority order (HOTFIX #12585), so only the comparison documented in `test_relation_to_the_seed_log` is made:

* round 1: actives identical to the 2.7.2 log; warmups 1_0 on bbb83e43 (same) and 1_1 on 4b61083e, where
  2.7.2 gave 1_2 to 7156cef1 (its heap-array iteration order). Movements 1_0, 1_1, 1_2, 1_3 all have one
  caught-up client, so 3.3+ takes them by TaskId and spends the 2 warmups on 1_0 and 1_1.
* rounds 2 and 3 (whose inputs are the seed's real 2.7.2 state): identical to the 2.7.2 log.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

import pytest

from streamlet.assignment.simulation import simulate
from tests.unit.assignment.research_cases import seed_case

ROUND1 = "seed000-round1-third-client-joins"
ROUND2 = "seed000-round2-after-first-probing"
ROUND3 = "seed000-round3-converged"


def _java_order(pids: Any) -> list[str]:
    # java.util.UUID.compareTo: two signed 64-bit halves
    return sorted(pids, key=lambda p: struct.unpack(">qq", uuid.UUID(p).bytes))


def _lag(case: dict[str, Any], pid: str, task: str) -> int | None:
    """None = running active (-2); otherwise end - reported (no report or beyond end: the whole end)."""
    end = case["changelog_end_offset_sums"][task]
    reported = case["clients"][pid]["task_offset_sums"].get(task)
    if reported == -2:
        return None
    if reported is None or reported > end:
        return end
    return end - reported


def _caught_up(case: dict[str, Any], pid: str, task: str) -> bool:
    lag = _lag(case, pid, task)
    return lag is None or 0 <= lag <= case["config"]["acceptable_recovery_lag"]


def _round_robin_target(case: dict[str, Any], task: str) -> str:
    order = _java_order(case["clients"])
    stateful = sorted(case["tasks"]["stateful"], key=lambda t: tuple(int(x) for x in t.split("_")))
    return order[stateful.index(task) % len(order)]


def _stateful_actives(case: dict[str, Any], result: dict[str, Any], pid: str) -> list[str]:
    return [t for t in result["clients"][pid]["active"] if t in case["tasks"]["stateful"]]


@pytest.fixture(scope="module")
def results() -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    return {name: (seed_case(name), simulate(seed_case(name))) for name in (ROUND1, ROUND2, ROUND3)}


def test_output_shape_and_java_client_order(results: dict[str, Any]) -> None:
    for case, result in results.values():
        assert list(result["clients"]) == _java_order(case["clients"])
        assert _java_order(case["clients"])[0] == "bbb83e43-b1af-4b2d-a60a-94a7091684d0"  # negative msb first
        all_tasks = case["tasks"]["stateless"] + case["tasks"]["stateful"]
        actives = [t for c in result["clients"].values() for t in c["active"]]
        assert sorted(actives) == sorted(all_tasks)  # every task active exactly once
        for assignment in result["clients"].values():
            assert assignment["active"] == sorted(assignment["active"])
            assert not set(assignment["active"]) & set(assignment["standby"])


def test_round1_no_stateful_active_on_a_lagging_client_when_a_caught_up_one_exists(results: dict[str, Any]) -> None:
    case, result = results[ROUND1]
    checked = 0
    for pid in case["clients"]:
        for task in _stateful_actives(case, result, pid):
            if any(_caught_up(case, other, task) for other in case["clients"]):
                assert _caught_up(case, pid, task), f"{task} is active on lagging {pid}"
                checked += 1
    assert checked == 6


def test_round1_at_most_max_warmup_replicas_warmups(results: dict[str, Any]) -> None:
    case, result = results[ROUND1]
    assert case["config"]["num_standby_replicas"] == 0  # so every standby is a warmup
    warmups = [t for c in result["clients"].values() for t in c["standby"]]
    assert 0 < len(warmups) <= case["config"]["max_warmup_replicas"]


def test_round1_every_client_has_4_active_tasks(results: dict[str, Any]) -> None:
    _, result = results[ROUND1]
    assert [len(c["active"]) for c in result["clients"].values()] == [4, 4, 4]


def test_round1_requests_a_probing_rebalance(results: dict[str, Any]) -> None:
    case, result = results[ROUND1]
    assert result["followup_rebalance_ms"] == case["config"]["probing_rebalance_interval_ms"]


def test_round2_caught_up_warmups_move_to_their_round_robin_owners(results: dict[str, Any]) -> None:
    case, result = results[ROUND2]
    moved = 0
    for pid, client in case["clients"].items():
        for task in client["prev_standby"]:
            if _caught_up(case, pid, task) and _round_robin_target(case, task) == pid:
                assert task in result["clients"][pid]["active"]
                moved += 1
    assert moved == 2  # 1_0 on bbb83e43 and 1_2 on 7156cef1


def test_round2_one_client_holds_4_of_6_stateful_tasks(results: dict[str, Any]) -> None:
    case, result = results[ROUND2]
    counts = sorted(len(_stateful_actives(case, result, pid)) for pid in case["clients"])
    assert counts == [1, 1, 4]
    assert result["followup_rebalance_ms"] == case["config"]["probing_rebalance_interval_ms"]


def test_round3_reaches_the_round_robin_target_without_follow_up(results: dict[str, Any]) -> None:
    case, result = results[ROUND3]
    for task in case["tasks"]["stateful"]:
        assert task in result["clients"][_round_robin_target(case, task)]["active"]
    assert all(not c["standby"] for c in result["clients"].values())
    assert result["followup_rebalance_ms"] is None


def test_relation_to_the_seed_log(results: dict[str, Any]) -> None:
    """See the module docstring: 3.3+ differs from 2.7.2 only in round 1's second warmup."""
    for name in (ROUND2, ROUND3):
        case, result = results[name]
        assert result == case["expected_seen_in_seed"], name
    case, result = results[ROUND1]
    seen = case["expected_seen_in_seed"]["clients"]
    for pid, client in result["clients"].items():
        assert client["active"] == seen[pid]["active"]
    assert result["clients"]["bbb83e43-b1af-4b2d-a60a-94a7091684d0"]["standby"] == ["1_0"]
    assert seen["7156cef1-307e-49c0-a5bb-0f11d26a4933"]["standby"] == ["1_2"]  # 2.7.2: heap-array order
    assert result["clients"]["4b61083e-57d0-457d-951f-d06556c148ca"]["standby"] == ["1_1"]  # 3.3+: by TaskId
