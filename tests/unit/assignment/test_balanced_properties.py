"""BalancedTaskAssignor on generated group snapshots (`tests.support.case_strategies.contract_cases`).

Every property is checked from the case itself (lags, Java order and quotas recomputed here), not from
the assignor's internals:

* a valid assignment (`validate_task_assignment` is run by `simulate`), every task active exactly once,
  no client holding a task twice, standbys only for stateful tasks, at most
  `num_standby_replicas` per task plus `max_warmup_replicas` warmups in all;
* availability: a stateful active is on a caught-up client whenever one exists, else on a client with
  the smallest lag (KAFKA-13600);
* when every stateful task has a caught-up previous owner (no orphans): each client keeps at least
  min(previous, floor share) of its previous stateful actives and ends with at most
  max(previous, ceil share), shares being `N * threads / total threads` (goals 2 and 3);
* feeding each output back (round model of test_balanced.py) converges within
  ceil(stateful * (1 + standbys) / max_warmup_replicas) + 1 rebalances to a fixed point: the same input
  again gives the same output and no follow-up (goal 4).
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import HealthCheck, given, settings

from streamlet.assignment.simulation import simulate
from tests.support.case_strategies import contract_cases
from tests.unit.assignment.test_balanced import caught_up, lag, next_round, prev_owners

_GENERATED = settings(
    max_examples=400,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _stateful_before(case: dict[str, Any], p: str) -> int:
    return sum(t in case["tasks"]["stateful"] for t in case["clients"][p].get("prev_active", []))


@_GENERATED
@given(case=contract_cases())
def test_valid_assignment_and_availability(case: dict[str, Any]) -> None:
    result = simulate(case, "balanced")  # raises if validate_task_assignment is not NONE
    clients = result["clients"]
    assert set(clients) == {p.lower() for p in case["clients"]}
    stateful = set(case["tasks"]["stateful"])
    all_tasks = stateful | set(case["tasks"]["stateless"])
    actives = [t for c in clients.values() for t in c["active"]]
    assert sorted(actives) == sorted(all_tasks)
    for c in clients.values():
        assert len(set(c["active"]) | set(c["standby"])) == len(c["active"]) + len(c["standby"])
        assert set(c["standby"]) <= stateful
    standbys = sum(len(c["standby"]) for c in clients.values())
    config = case["config"]
    assert standbys <= len(stateful) * config["num_standby_replicas"] + config["max_warmup_replicas"]
    assert result["followup_rebalance_ms"] in (None, config["probing_rebalance_interval_ms"])
    if result["followup_rebalance_ms"] is not None:
        assert standbys > 0  # a follow-up is only requested for pending warmups

    pids = list(case["clients"])
    for p, c in clients.items():
        for t in c["active"]:
            if t not in stateful:
                continue
            if any(caught_up(case, q, t) for q in pids):
                assert caught_up(case, p, t), f"{t} on lagging {p} although a caught-up client exists"
            else:
                assert lag(case, p, t) == min(lag(case, q, t) for q in pids), f"{t} not on the most caught-up"


@_GENERATED
@given(case=contract_cases())
def test_sticky_and_never_more_skewed_without_orphans(case: dict[str, Any]) -> None:
    stateful = case["tasks"]["stateful"]
    before = prev_owners(case)
    claims = [(t, p) for p, c in case["clients"].items() for t in c.get("prev_active", []) if t in stateful]
    if len(claims) != len(stateful) or not all(caught_up(case, p, t) for t, p in claims):
        return  # some task has no (or no caught-up) previous owner
    result = simulate(case, "balanced")
    n = len(stateful)
    total_threads = sum(c.get("capacity", 1) for c in case["clients"].values())
    for p, c in result["clients"].items():
        threads = case["clients"][p].get("capacity", 1)
        floor_share, ceil_share = n * threads // total_threads, math.ceil(n * threads / total_threads)
        had = _stateful_before(case, p)
        kept = sum(before.get(t) == p for t in c["active"])
        now = sum(t in stateful for t in c["active"])
        assert kept >= min(had, floor_share), (p, had, kept, floor_share)
        assert now <= max(had, ceil_share), (p, had, now, ceil_share)


@settings(_GENERATED, max_examples=300)
@given(case=contract_cases())
def test_converges_to_a_fixed_point(case: dict[str, Any]) -> None:
    config = case["config"]
    bound = (
        math.ceil(len(case["tasks"]["stateful"]) * (1 + config["num_standby_replicas"]) / config["max_warmup_replicas"])
        + 1
    )
    result = simulate(case, "balanced")
    rounds = 1
    while result["followup_rebalance_ms"] is not None:
        case = next_round(case, result)
        result = simulate(case, "balanced")
        rounds += 1
        assert rounds <= bound
    again = next_round(case, result)
    assert simulate(again, "balanced") == result
