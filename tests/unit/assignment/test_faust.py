"""FaustTaskAssignor (seed 002) on hand-made and generated group snapshots.

Properties (each recomputed from the case, not from the assignor's internals), on
`tests.support.case_strategies.contract_cases` snapshots:

* every task active exactly once, standbys only for stateful tasks (`simulate` also runs
  `validate_task_assignment`);
* a standby never on the client that runs its active; each stateful task has
  `min(num_standby_replicas, clients - 1)` standbys on distinct clients;
* co-partitioned together: tasks with the same partition number in sub-topologies with the same number
  of partitions have the same active client and the same standby clients;
* capacity: per number of partitions `n` with `G` groups, a client runs at most
  `ceil(G * threads / total threads)` groups;
* sticky: feeding the output back as the previous assignment changes no active;
* the same input and seed give the same output.
"""

from __future__ import annotations

import math
import uuid
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings

from streamlet.assignment.faust import FaustTaskAssignor
from streamlet.assignment.simulation import simulate
from tests.support.case_strategies import contract_cases

PID = [f"00000000-0000-0000-0000-00000000000{n}" for n in range(1, 10)]

_GENERATED = settings(
    max_examples=300,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _groups(case: dict[str, Any]) -> dict[tuple[int, int], list[str]]:
    """(number of partitions, partition) -> tasks, from the case's task lists."""
    tasks = case["tasks"]["stateless"] + case["tasks"]["stateful"]
    width = Counter(t.split("_")[0] for t in tasks)
    groups: dict[tuple[int, int], list[str]] = {}
    for t in tasks:
        sub, part = t.split("_")
        groups.setdefault((width[sub], int(part)), []).append(t)
    return groups


def _holders(result: dict[str, Any], task: str, kind: str) -> list[str]:
    return sorted(pid for pid, c in result["clients"].items() if task in c[kind])


def _next_round(case: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """The previous assignment of the next rebalance: running actives report -2, standbys their end offset."""
    ends = case["changelog_end_offset_sums"]
    clients = {}
    for pid, raw in case["clients"].items():
        out = result["clients"][pid.lower()]
        stateful = set(case["tasks"]["stateful"])
        clients[pid] = {
            "capacity": raw.get("capacity", 1),
            "prev_active": out["active"],
            "prev_standby": out["standby"],
            "task_offset_sums": {
                **{t: ends[t] for t in out["standby"]},
                **{t: -2 for t in out["active"] if t in stateful},
            },
        }
    return {**case, "clients": clients}


@_GENERATED
@given(case=contract_cases())
def test_valid_copartitioned_and_within_capacity(case: dict[str, Any]) -> None:
    result = simulate(case, "faust")
    clients = result["clients"]
    stateful = set(case["tasks"]["stateful"])
    all_tasks = stateful | set(case["tasks"]["stateless"])
    assert sorted(t for c in clients.values() for t in c["active"]) == sorted(all_tasks)
    replicas = min(case["config"]["num_standby_replicas"], len(clients) - 1)
    for task in stateful:
        standbys = _holders(result, task, "standby")
        assert len(standbys) == replicas
        assert not set(standbys) & set(_holders(result, task, "active"))
    for task in all_tasks - stateful:
        assert _holders(result, task, "standby") == []

    groups = _groups(case)
    for tasks in groups.values():
        assert len({tuple(_holders(result, t, "active")) for t in tasks}) == 1
        assert len({tuple(_holders(result, t, "standby")) for t in tasks if t in stateful}) <= 1

    threads = {pid.lower(): c.get("capacity", 1) for pid, c in case["clients"].items()}
    total = sum(threads.values())
    for n in {n for n, _ in groups}:
        of_class = [tasks[0] for (width, _), tasks in groups.items() if width == n]
        for pid, c in clients.items():
            held = sum(t in c["active"] for t in of_class)
            assert held <= math.ceil(len(of_class) * threads[pid] / total)


@_GENERATED
@given(case=contract_cases())
def test_sticky_and_deterministic(case: dict[str, Any]) -> None:
    first = simulate(case, "faust")
    assert simulate(case, "faust") == first
    again = simulate(_next_round(case, first), "faust")
    for pid, c in first["clients"].items():
        assert again["clients"][pid]["active"] == c["active"]


@_GENERATED
@given(case=contract_cases())
def test_standbys_within_the_even_share_when_clients_are_alike(case: dict[str, Any]) -> None:
    """All clients with one thread: per class of S stateful groups, a client holds at most
    ceil(S * replicas / clients) of them as standbys. (With unequal threads the share can be impossible:
    a one-thread client may have to back up every group of a four-thread one. So it is when every other client
    must hold a copy, replicas = clients - 1: a client then backs up every group it does not run, and a newcomer
    that runs none while the others are within their limit backs up all S.)"""
    case = {**case, "clients": {p: {**c, "capacity": 1} for p, c in case["clients"].items()}}
    result = simulate(case, "faust")
    replicas = min(case["config"]["num_standby_replicas"], len(case["clients"]) - 1)
    stateful = set(case["tasks"]["stateful"])
    groups = _groups(case)
    for n in {n for n, _ in groups}:
        backed = [
            next(t for t in tasks if t in stateful)
            for (w, _), tasks in groups.items()
            if w == n and stateful & set(tasks)
        ]
        for c in result["clients"].values():
            share = math.ceil(len(backed) * replicas / len(case["clients"]))
            if replicas == len(case["clients"]) - 1:
                share = max(share, sum(t not in c["active"] for t in backed))
            assert sum(t in c["standby"] for t in backed) <= share


def _case(clients: dict[str, dict[str, Any]], stateless: list[str], stateful: list[str], standbys: int = 0) -> dict:
    return {
        "config": {"num_standby_replicas": standbys},
        "tasks": {"stateless": stateless, "stateful": stateful},
        "changelog_end_offset_sums": dict.fromkeys(stateful, 100),
        "clients": {
            pid: {"capacity": 1, **c, "task_offset_sums": dict.fromkeys(c.get("prev_standby", []), 100)}
            for pid, c in clients.items()
        },
    }


def test_same_partition_numbers_of_equal_width_sub_topologies_go_together() -> None:
    """Sub-topologies 0 and 1 have 3 partitions (a join's two sides), 2 has 2: groups (3, p) and (2, p)."""
    case = _case({PID[0]: {}, PID[1]: {}}, ["0_0", "0_1", "0_2", "2_0", "2_1"], ["1_0", "1_1", "1_2"])
    clients = simulate(case, "faust")["clients"]
    for pid in (PID[0], PID[1]):
        active = clients[pid]["active"]
        for p in range(3):
            assert (f"0_{p}" in active) == (f"1_{p}" in active)
    assert sorted(len(c["active"]) for c in clients.values()) == [3, 5]  # ceil(3/2)=2 groups of 2, 1 of 1


def test_a_previous_standby_is_promoted_when_the_owner_leaves() -> None:
    """Seed 002: 'assign a partition (where changelog is involved) to a client which contains a standby'."""
    case = _case(
        {PID[0]: {"prev_active": ["0_0"]}, PID[1]: {"prev_active": ["0_2"]}, PID[2]: {"prev_standby": ["0_1"]}},
        [],
        ["0_0", "0_1", "0_2"],
    )
    clients = simulate(case, "faust")["clients"]
    assert [clients[p]["active"] for p in PID[:3]] == [["0_0"], ["0_2"], ["0_1"]]


def test_standbys_spread_evenly_and_the_seed_decides_the_ties() -> None:
    """12 stateful groups, 1 replica, 4 single-thread clients: 3 standbys each; other seeds, other ties."""
    tasks = [f"0_{p}" for p in range(12)]
    case = _case({pid: {} for pid in PID[:4]}, [], tasks, standbys=1)
    layouts = set()
    for seed in range(5):
        result = simulate(case, FaustTaskAssignor(seed=seed))
        assert sorted(len(c["standby"]) for c in result["clients"].values()) == [3, 3, 3, 3]
        layouts.add(tuple(tuple(c["standby"]) for c in result["clients"].values()))
    assert len(layouts) > 1


def test_standbys_even_out_through_a_third_client_when_no_group_fits_directly() -> None:
    """Found by the property above: a client over its share (4 copies of a class of 9 groups, share 3) holds only
    groups that the client under it (2) runs or already backs up. A third client takes one of the over one's
    groups and hands one of its own on, so every client ends at 3."""

    def pid(hi: int, lo: int) -> str:
        return str(uuid.UUID(int=((hi % 2**64) << 64) | (lo % 2**64)))

    def client(active: str, offsets: str) -> dict[str, Any]:
        """Previous active tasks, and the offset sums reported (-2: running)."""
        sums = {t: int(o) for t, o in (pair.split("=") for pair in offsets.split())}
        return {"capacity": 1, "prev_active": active.split(), "prev_standby": [], "task_offset_sums": sums}

    clients = {
        pid(15, -1): client(
            "0_0 0_2 0_4 0_6 0_7 1_2 1_3 1_5 1_7 1_8",
            "0_0=-2 0_2=-2 0_3=1 0_4=-2 0_5=1 0_6=-2 0_7=-2 0_8=0 1_0=0 1_1=0 1_2=-2 1_3=-2 1_4=1 1_5=-2 1_7=-2 "
            "1_8=-2 2_0=0",
        ),
        pid(0, 6745964336): client("2_0", "0_0=0 0_1=1 0_4=2 0_7=1 0_8=0 1_0=0 1_3=1 1_6=1 2_0=-2"),
        pid(0, 3): client("", "0_0=0 0_1=1 0_7=0"),
        pid(5, -1): client("0_1 0_3 0_8 1_6", "0_1=0 0_3=-2 0_8=-2 1_2=0 1_5=0 1_6=-2"),
        pid(0, 8): client("1_0 1_4", "0_5=0 0_8=1 1_0=-2 1_2=0 1_4=-2"),
        pid(0, 1): client("", "0_4=1 0_7=0 1_0=1 1_3=1 2_0=0"),
    }
    stateful = [f"{sub}_{p}" for sub in (0, 1) for p in range(9)] + ["2_0"]
    case = {
        "config": {"num_standby_replicas": 2},
        "tasks": {"stateless": [], "stateful": stateful},
        "changelog_end_offset_sums": dict.fromkeys(stateful, 1),
        "clients": clients,
    }
    result = simulate(case, "faust")
    for sub in ("0", "1"):  # each a class of 9 groups: 18 copies over 6 clients, 3 each
        held = {c: sum(t.startswith(f"{sub}_") for t in r["standby"]) for c, r in result["clients"].items()}
        assert held == dict.fromkeys(clients, 3), (sub, held)
