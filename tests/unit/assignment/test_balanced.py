"""BalancedTaskAssignor ("balanced") on the scenarios that motivate it, against HATA on the same inputs.

Expectations come from the assignor's goals (module docstring of `streamlet.assignment.balanced`) and,
for HATA, from its documented behaviour (round-robin by Java UUID order, research note §6.10 and the
research JSON's `convergence` rounds); the lags and Java UUID order are computed here independently.

Round model (the research note's): between rebalances every assigned task is fully restored, so a
client's actives report -2 and its standbys/warmups report offset sum = changelog end (lag 0); tasks it
was not given report nothing. Departed clients disappear; new clients start with no state.
"""

from __future__ import annotations

import copy
import json
import struct
import uuid
from typing import Any

import pytest

from streamlet.assignment.api import ApplicationState, AssignmentConfigs, TaskInfo
from streamlet.assignment.balanced import BalancedTaskAssignor, fair_quotas
from streamlet.assignment.registry import resolve_task_assignor
from streamlet.assignment.simulation import build_application_state, simulate
from streamlet.errors import TaskAssignmentError
from streamlet.task_id import TaskId
from tests.support.fixtures import ASSIGNMENT_CASES

DATA = ASSIGNMENT_CASES
ROUND1 = "seed000-round1-third-client-joins"
ROUND2 = "seed000-round2-after-first-probing"
ROUND3 = "seed000-round3-converged"
NEWCOMER, OLD_A, OLD_B = (
    "bbb83e43-b1af-4b2d-a60a-94a7091684d0",
    "4b61083e-57d0-457d-951f-d06556c148ca",
    "7156cef1-307e-49c0-a5bb-0f11d26a4933",
)
LONG_MAX = 2**63 - 1


# ---- helpers (independent of the assignor) ---------------------------------------------------------------


def pid(n: int) -> str:
    return str(uuid.UUID(int=n))


def java_order(pids: Any) -> list[str]:
    return sorted(pids, key=lambda p: struct.unpack(">qq", uuid.UUID(p).bytes))


def seed_case(name: str) -> dict[str, Any]:
    return json.loads((DATA / f"{name}.json").read_text())


def lag(case: dict[str, Any], p: str, task: str) -> int:
    """-2 for a running active; otherwise end - reported (nothing reported, or beyond the end: the end)."""
    end = case["changelog_end_offset_sums"].get(task, 0)
    reported = case["clients"][p].get("task_offset_sums", {}).get(task)
    if reported == -2:
        return -2
    if reported is None or reported > end:
        return end
    return end - reported


def caught_up(case: dict[str, Any], p: str, task: str) -> bool:
    acceptable = case["config"]["acceptable_recovery_lag"]
    value = lag(case, p, task)
    return value == -2 or acceptable == LONG_MAX or 0 <= value <= acceptable


def next_round(case: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    stateful = set(case["tasks"]["stateful"])
    ends = case["changelog_end_offset_sums"]
    nxt = copy.deepcopy(case)
    nxt["clients"] = {}
    for p, c in result["clients"].items():
        sums = {t: ends.get(t, 0) for t in c["standby"]}
        sums.update({t: -2 for t in c["active"] if t in stateful})
        nxt["clients"][p] = {
            "capacity": case["clients"][p].get("capacity", 1),
            "prev_active": list(c["active"]),
            "prev_standby": list(c["standby"]),
            "task_offset_sums": sums,
        }
    return nxt


def run_rounds(case: dict[str, Any], assignor: str, limit: int = 40) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Rebalances until one requests no follow-up (that one included)."""
    rounds = []
    for _ in range(limit):
        result = simulate(case, assignor)
        rounds.append((case, result))
        if result["followup_rebalance_ms"] is None:
            return rounds
        case = next_round(case, result)
    raise AssertionError(f"{assignor} did not converge within {limit} rebalances")


def stateful_counts(case: dict[str, Any], result: dict[str, Any]) -> dict[str, int]:
    stateful = set(case["tasks"]["stateful"])
    return {p: sum(t in stateful for t in c["active"]) for p, c in result["clients"].items()}


def owners(case: dict[str, Any], result: dict[str, Any]) -> dict[str, str]:
    stateful = set(case["tasks"]["stateful"])
    return {t: p for p, c in result["clients"].items() for t in c["active"] if t in stateful}


def prev_owners(case: dict[str, Any]) -> dict[str, str]:
    stateful = set(case["tasks"]["stateful"])
    return {t: p for p, c in case["clients"].items() for t in c.get("prev_active", []) if t in stateful}


def moved_actives(rounds: list[tuple[dict[str, Any], dict[str, Any]]]) -> int:
    """Stateful actives whose client differs from the previous rebalance's (a departed owner counts)."""
    return sum(prev_owners(case).get(t) != p for case, result in rounds for t, p in owners(case, result).items())


def assert_stable(case: dict[str, Any], result: dict[str, Any], assignor: str = "balanced") -> None:
    assert result["followup_rebalance_ms"] is None
    assert simulate(next_round(case, result), assignor) == result


def layout_case(
    layout: dict[str, dict[str, Any]],
    *,
    stateful: list[str],
    end: int,
    standbys: int,
    stateless: list[str] = (),
    acceptable: int = 10_000,
    warmups: int = 2,
) -> dict[str, Any]:
    """A case where every client runs `active` (-2) and holds `standby` caught up (offset sum = end)."""
    clients = {}
    for p, c in layout.items():
        sums = {t: end for t in c.get("standby", [])}
        sums.update({t: -2 for t in c.get("active", []) if t in stateful})
        clients[p] = {
            "capacity": c.get("capacity", 1),
            "prev_active": list(c.get("active", [])),
            "prev_standby": list(c.get("standby", [])),
            "task_offset_sums": sums,
        }
    return {
        "config": {
            "num_standby_replicas": standbys,
            "max_warmup_replicas": warmups,
            "acceptable_recovery_lag": acceptable,
            "probing_rebalance_interval_ms": 600_000,
        },
        "tasks": {"stateless": list(stateless), "stateful": list(stateful)},
        "changelog_end_offset_sums": dict.fromkeys(stateful, end),
        "clients": clients,
    }


# ---- registration, quotas, follow-up placement ------------------------------------------------------------


def test_registered_as_balanced() -> None:
    assert isinstance(resolve_task_assignor("balanced"), BalancedTaskAssignor)


def test_fair_quotas_are_floor_or_ceil_of_the_capacity_share_and_prefer_current_holders() -> None:
    a, b, c, d = (uuid.UUID(int=n) for n in (1, 2, 3, 4))
    order = {a: 0, b: 1, c: 2, d: 3}
    caps = dict.fromkeys(order, 1)
    # 6 tasks on 4 equal clients: shares 1.5 -> two clients get 2; the ones already holding 2 keep them
    assert fair_quotas({a: 2, b: 2, c: 2, d: 0}, caps, 6, order) == {a: 2, b: 2, c: 1, d: 1}
    assert fair_quotas({a: 0, b: 0, c: 2, d: 2}, caps, 6, order) == {a: 1, b: 1, c: 2, d: 2}
    # capacity 1 and 3, 6 tasks: shares 1.5 and 4.5; with nothing held, the extra goes where it adds the
    # least per thread (the 3-thread client: 5/3 < 2/1)
    assert fair_quotas({}, {a: 1, b: 3}, 6, {a: 0, b: 1}) == {a: 1, b: 5}
    assert fair_quotas({a: 2, b: 4}, {a: 1, b: 3}, 6, {a: 0, b: 1}) == {a: 2, b: 4}


def test_followup_deadline_goes_to_the_leader_only_and_uses_now_ms() -> None:
    case = seed_case(ROUND1)
    state: ApplicationState = build_application_state(case, now_ms=1_000)
    state.leader_process_id = uuid.UUID(OLD_B)
    result = BalancedTaskAssignor().assign(state).by_process_id()
    deadlines = {str(p): a.followup_rebalance_deadline for p, a in result.items()}
    assert deadlines == {NEWCOMER: None, OLD_A: None, OLD_B: 1_000 + 60_000}


# ---- seed 000: a third client joins 2 clients x 3 stateful tasks ------------------------------------------


def test_seed000_join_never_exceeds_the_pre_join_maximum_and_converges_in_two_rebalances() -> None:
    """The bound: 3 stateful actives on one client in the join rebalance, 2 from the next one on.

    3 is the pre-join maximum and unavoidable: acceptable.recovery.lag is 0 and the newcomer has no state,
    so no client can take a task without a restore (goal 1); goal 3 allows max(previous 3, target 2).
    """
    rounds = run_rounds(seed_case(ROUND1), "balanced")
    assert len(rounds) == 2
    (case1, result1), (case2, result2) = rounds
    assert all(not caught_up(case1, NEWCOMER, t) for t in case1["tasks"]["stateful"])
    assert stateful_counts(case1, result1) == {NEWCOMER: 0, OLD_A: 3, OLD_B: 3}
    assert owners(case1, result1) == prev_owners(case1)  # nobody moves (sticky, nothing caught up)
    warmups = result1["clients"][NEWCOMER]["standby"]
    # both old clients are 1 over their quota of 2: one warmup from each (max_warmup_replicas = 2)
    assert len(warmups) == 2
    assert sorted(prev_owners(case1)[t] for t in warmups) == sorted([OLD_A, OLD_B])
    assert result1["followup_rebalance_ms"] == 60_000
    # total active load stays balanced with stateless tasks: 12 tasks, 4 each
    assert [len(c["active"]) for c in result1["clients"].values()] == [4, 4, 4]

    assert stateful_counts(case2, result2) == {NEWCOMER: 2, OLD_A: 2, OLD_B: 2}
    assert {t for t, p in owners(case2, result2).items() if p == NEWCOMER} == set(warmups)  # its warmed-up tasks
    assert moved_actives(rounds) == 2
    assert_stable(case2, result2)


def test_seed000_recorded_sequence_hata_reaches_4_balanced_never_does() -> None:
    """The seed's own three rebalances (Kafka Streams 2.7.2's states): HATA puts 4 of 6 stateful tasks on
    one client in round 2; on the same inputs balanced never gives a client more than it had or its quota."""
    hata_max, balanced_max = 0, 0
    for name in (ROUND1, ROUND2, ROUND3):
        case = seed_case(name)
        hata_max = max(hata_max, *stateful_counts(case, simulate(case, "high_availability")).values())
        counts = stateful_counts(case, simulate(case, "balanced"))
        before = {p: sum(t in case["tasks"]["stateful"] for t in c["prev_active"]) for p, c in case["clients"].items()}
        for p, n in counts.items():
            assert n <= max(before[p], 2), (name, p, n)
        balanced_max = max(balanced_max, *counts.values())
    assert hata_max == 4
    assert balanced_max == 3

    # from the state the seed's cluster was really in at round 2, balanced converges to 2/2/2
    rounds = run_rounds(seed_case(ROUND2), "balanced")
    assert len(rounds) == 2
    assert all(max(stateful_counts(c, r).values()) <= 3 for c, r in rounds)
    assert sorted(stateful_counts(*rounds[-1]).values()) == [2, 2, 2]
    assert_stable(*rounds[-1])


def test_seed000_balanced_converges_no_later_than_hata_in_the_round_model() -> None:
    hata = run_rounds(seed_case(ROUND1), "high_availability")
    balanced = run_rounds(seed_case(ROUND1), "balanced")
    assert len(balanced) <= len(hata)
    assert moved_actives(balanced) < moved_actives(hata)
    assert sorted(stateful_counts(*hata[-1]).values()) == [2, 2, 2]


# ---- client replacement: the client with the smallest UUID is replaced by a fresh one ------------------------

SIX = [f"1_{i}" for i in range(6)]
#: HATA's own steady state for pid 1..3 (round-robin in UUID order), with each client's standbys spread
REPLACEMENT_LAYOUT = {
    pid(1): {"active": ["1_0", "1_3"], "standby": ["1_2", "1_4"]},
    pid(2): {"active": ["1_1", "1_4"], "standby": ["1_0", "1_5"]},
    pid(3): {"active": ["1_2", "1_5"], "standby": ["1_1", "1_3"]},
}


def _replaced(end: int, standbys: int) -> dict[str, Any]:
    layout = {p: dict(c) for p, c in REPLACEMENT_LAYOUT.items() if p != pid(1)}
    if standbys == 0:
        layout = {p: {"active": c["active"]} for p, c in layout.items()}
    return layout_case({**layout, pid(9): {}}, stateful=SIX, end=end, standbys=standbys)


@pytest.mark.parametrize("standbys", [0, 1])
def test_the_pre_replacement_layout_is_stable_under_balanced(standbys: int) -> None:
    layout = REPLACEMENT_LAYOUT if standbys else {p: {"active": c["active"]} for p, c in REPLACEMENT_LAYOUT.items()}
    case = layout_case(layout, stateful=SIX, end=1_000_000, standbys=standbys)
    result = simulate(case, "balanced")
    assert {p: c["active"] for p, c in result["clients"].items()} == {p: c["active"] for p, c in layout.items()}
    assert_stable(case, result)


@pytest.mark.parametrize("standbys", [0, 1])
def test_replacement_with_small_changelogs_moves_only_the_departed_clients_tasks(standbys: int) -> None:
    """Changelog end 100 <= acceptable 10 000: every client, even the fresh one, counts as caught up."""
    case = _replaced(end=100, standbys=standbys)
    assert all(caught_up(case, pid(9), t) for t in SIX)
    balanced = run_rounds(case, "balanced")
    assert len(balanced) == 1
    final = owners(*balanced[-1])
    assert {t for t, p in final.items() if p == pid(9)} == {"1_0", "1_3"}  # the departed client's tasks
    assert moved_actives(balanced) == 2
    # HATA re-deals round-robin over (pid 2, pid 3, pid 9): every one of the 6 tasks changes client
    hata = run_rounds(case, "high_availability")
    assert owners(*hata[-1]) == {
        "1_0": pid(2),
        "1_1": pid(3),
        "1_2": pid(9),
        "1_3": pid(2),
        "1_4": pid(3),
        "1_5": pid(9),
    }
    assert moved_actives(hata) == 6


def test_replacement_with_large_changelogs_goes_through_the_standbys_and_never_moves_survivors() -> None:
    case = _replaced(end=1_000_000, standbys=1)
    survivors = {t: p for t, p in prev_owners(case).items()}  # 1_1, 1_4 on pid 2; 1_2, 1_5 on pid 3
    balanced = run_rounds(case, "balanced")
    case1, result1 = balanced[0]
    # the departed tasks go to their caught-up standbys: availability first (goal 1) ...
    assert owners(case1, result1)["1_0"] == pid(2) and owners(case1, result1)["1_3"] == pid(3)
    # ... which makes 3 on one client unavoidable for one rebalance (only the standby is caught up)
    for c, r in balanced:
        assert max(stateful_counts(c, r).values()) <= 3
        assert all(owners(c, r)[t] == p for t, p in survivors.items())  # survivors never move
    final = owners(*balanced[-1])
    assert {t for t, p in final.items() if p == pid(9)} == {"1_0", "1_3"}
    assert moved_actives(balanced) == 4  # each departed task: to its standby, then to the new client
    assert_stable(*balanced[-1])
    # HATA converges to round-robin over (pid 2, pid 3, pid 9): all 4 surviving tasks end elsewhere
    hata = run_rounds(case, "high_availability")
    hata_final = owners(*hata[-1])
    assert sum(hata_final[t] != p for t, p in survivors.items()) == 4
    assert moved_actives(hata) > moved_actives(balanced)


def test_replacement_without_any_copy_gives_the_tasks_to_the_new_client_at_once() -> None:
    """No standbys, large changelogs: nobody has the departed tasks, so every client is equally (not)
    caught up; the least-loaded one (the fresh client) restores them and nothing else moves."""
    case = _replaced(end=1_000_000, standbys=0)
    balanced = run_rounds(case, "balanced")
    assert len(balanced) == 1
    assert {t for t, p in owners(*balanced[0]).items() if p == pid(9)} == {"1_0", "1_3"}
    assert moved_actives(balanced) == 2
    hata = run_rounds(case, "high_availability")
    assert moved_actives(hata) > 2
    assert max(max(stateful_counts(c, r).values()) for c, r in hata) > 2


# ---- scale-out 3 -> 4, 12 tasks, 1 standby (research note §6.10 #3, the research JSON's convergence) -------


def _research_scale_out() -> tuple[dict[str, Any], dict[str, Any]]:
    research = json.loads((DATA / "kafka-streams-assignor-cases.json").read_text())["convergence"]
    tasks = [f"{s}_{p}" for s in (0, 1) for p in range(6)]
    layout = {  # the documented setup
        pid(1): {"active": tasks[0:4], "standby": tasks[4:8]},
        pid(2): {"active": tasks[4:8], "standby": tasks[8:12]},
        pid(3): {"active": tasks[8:12], "standby": tasks[0:4]},
        pid(4): {},
    }
    cfg = research["config"]
    case = layout_case(
        layout,
        stateful=tasks,
        end=1_000_000,
        standbys=cfg["num_standby_replicas"],
        acceptable=cfg["acceptable_recovery_lag"],
        warmups=cfg["max_warmup_replicas"],
    )
    return case, research


def test_scale_out_3_to_4_hata_matches_the_documented_7_rebalances_with_5_on_one_client() -> None:
    case, research = _research_scale_out()
    hata = run_rounds(case, "high_availability")
    assert len(hata) == len(research["rounds"]) == 7
    documented_max = max(len(c["active"]) for r in research["rounds"] for c in r["assignment"].values())
    assert max(max(stateful_counts(c, r).values()) for c, r in hata) == documented_max == 5


def test_scale_out_3_to_4_balanced_is_faster_and_never_more_skewed_than_before() -> None:
    """The newcomer needs 3 actives and 3 standbys (12 each / 4 clients), all restored from scratch, and at
    most 2 warmups run per rebalance: 3 rebalances of warmups plus the final one."""
    case, _ = _research_scale_out()
    balanced = run_rounds(case, "balanced")
    hata = run_rounds(case, "high_availability")
    assert len(balanced) <= 4 <= len(hata)
    balanced_max = max(max(stateful_counts(c, r).values()) for c, r in balanced)
    hata_max = max(max(stateful_counts(c, r).values()) for c, r in hata)
    assert balanced_max == 4 <= hata_max  # 4 = the pre-join maximum: never worse than before
    last_case, last = balanced[-1]
    assert sorted(stateful_counts(last_case, last).values()) == [3, 3, 3, 3]
    assert sorted(len(c["standby"]) for c in last["clients"].values()) == [3, 3, 3, 3]
    assert moved_actives(balanced) == 3  # only the newcomer's 3 tasks ever move
    assert_stable(last_case, last)


# ---- capacity-weighted balance -----------------------------------------------------------------------------

EIGHT = [f"1_{i}" for i in range(8)]
FOUR_STATELESS = [f"0_{i}" for i in range(4)]


def test_fresh_deployment_is_proportional_to_threads() -> None:
    """1 + 3 threads: 8 stateful -> 2 and 6; 12 actives in all -> 3 and 9 (stateless fill 1 and 3)."""
    case = layout_case(
        {pid(1): {"capacity": 1}, pid(2): {"capacity": 3}}, stateful=EIGHT, end=0, standbys=0, stateless=FOUR_STATELESS
    )
    rounds = run_rounds(case, "balanced")
    assert len(rounds) == 1
    assert stateful_counts(*rounds[0]) == {pid(1): 2, pid(2): 6}
    assert {p: len(c["active"]) for p, c in rounds[0][1]["clients"].items()} == {pid(1): 3, pid(2): 9}
    assert_stable(*rounds[0])


def test_a_three_thread_client_joining_a_one_thread_client_ends_at_2_and_6() -> None:
    everything = {"capacity": 1, "active": EIGHT + FOUR_STATELESS}
    case = layout_case(
        {pid(1): everything, pid(2): {"capacity": 3}},
        stateful=EIGHT,
        end=1_000_000,
        standbys=0,
        stateless=FOUR_STATELESS,
    )
    rounds = run_rounds(case, "balanced")
    # 6 tasks to warm up on the newcomer, 2 per rebalance: 3 rebalances with warmups, then the final one
    assert len(rounds) == 4
    for c, r in rounds:
        counts = stateful_counts(c, r)
        assert counts[pid(1)] <= 8 and counts[pid(2)] <= 6
        # stateless tasks go to the 3-thread client while the 1-thread one is overloaded
        per_thread = {p: len(x["active"]) / c["clients"][p]["capacity"] for p, x in r["clients"].items()}
        assert per_thread[pid(2)] <= per_thread[pid(1)]
    assert stateful_counts(*rounds[-1]) == {pid(1): 2, pid(2): 6}
    assert moved_actives(rounds) == 6
    assert_stable(*rounds[-1])


def test_empty_groups_and_missing_clients() -> None:
    empty = ApplicationState([], AssignmentConfigs(), {})
    assert BalancedTaskAssignor().assign(empty).assignment == ()
    with pytest.raises(TaskAssignmentError, match="no clients"):
        BalancedTaskAssignor().assign(ApplicationState([TaskInfo(TaskId(0, 0), False)], AssignmentConfigs(), {}))
