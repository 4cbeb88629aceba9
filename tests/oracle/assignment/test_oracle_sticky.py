"""Differential tests: streamlet's sticky assignors against Kafka Streams' own classes (KAFKA_VERSION).

* ``sticky``: ``org.apache.kafka.streams.processor.assignment.assignors.StickyTaskAssignor`` (KIP-924),
  also with ``mustPreserveActiveTaskAssignment = true``;
* ``legacy_sticky``: ``org.apache.kafka.streams.processor.internals.assignment.LegacyStickyTaskAssignor``;
* ``fallback_prior``: ``org.apache.kafka.streams.processor.internals.assignment.FallbackPriorTaskAssignor``.

The oracle (``oracle/``, a case's ``assignor`` field picks the class) gives every expected output. The
generated corpus (committed, tests/support/drawn_cases.py) is the one HATA's differential test runs, and is sent
to the JVM in one batch per assignor. On a mismatch the case is printed as one JSON line; replay it with
``echo '<json>' | java -jar oracle/target/streamlet-assignor-oracle.jar``.
"""

from __future__ import annotations

import json
import random
import uuid
from typing import Any

import pytest

from streamlet.assignment.simulation import simulate
from streamlet.assignment.sticky import StickyTaskAssignor
from tests.support.fixtures import ASSIGNMENT_CASES
from tests.support.oracle import Oracle, normalize_output, research_case_to_contract
from tests.support.oracle_corpus import GENERATED_LARGE, GENERATED_SMALL, assert_no_mismatch, dump, mismatches

pytestmark = pytest.mark.oracle

ASSIGNORS = ["sticky", "legacy_sticky", "fallback_prior"]
PRESERVING_STICKY = 400  # of the corpus, also run with mustPreserveActiveTaskAssignment = true

PID = [f"00000000-0000-0000-0000-00000000000{n}" for n in range(1, 10)]


def test_corpus_size(corpus: list[dict[str, Any]]) -> None:
    assert len({dump(c) for c in corpus}) == len(corpus) == GENERATED_SMALL + GENERATED_LARGE >= 1000


@pytest.mark.parametrize("assignor", ASSIGNORS)
def test_streamlet_matches_oracle_on_generated_cases(
    oracle: Oracle, corpus: list[dict[str, Any]], assignor: str
) -> None:
    cases = [{**case, "assignor": assignor} for case in corpus]
    assert_no_mismatch(mismatches(oracle, cases, assignor), len(cases), assignor)


def test_preserving_sticky_matches_oracle_on_generated_cases(oracle: Oracle, corpus: list[dict[str, Any]]) -> None:
    cases = [
        {**case, "assignor": "sticky", "must_preserve_active_task_assignment": True}
        for case in corpus[:PRESERVING_STICKY]
    ]
    problems = mismatches(oracle, cases, StickyTaskAssignor(must_preserve_active_task_assignment=True))
    assert_no_mismatch(problems, len(cases), "sticky(mustPreserveActiveTaskAssignment=true)")


def _sweep_scale_case(rng: random.Random, n_clients: int, n_subtopologies: int) -> dict[str, Any]:
    """A group as large as the sweeps go (up to 100 clients, 2,000+ tasks of 100 partitions each, so task
    ids share hash codes and buckets): 80% of the tasks had an owner, half the stateful ones a standby."""
    pids = [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(n_clients)]
    stateful = [f"{s}_{p}" for s in range(n_subtopologies) for p in range(100)]
    stateless = [f"{s}_{p}" for s in range(n_subtopologies, n_subtopologies + 2) for p in range(100)]
    clients: dict[str, dict[str, Any]] = {
        pid: {"capacity": rng.randint(1, 4), "prev_active": [], "prev_standby": [], "task_offset_sums": {}}
        for pid in pids
    }
    for task in stateful + stateless:
        if rng.random() < 0.8:
            owner = clients[rng.choice(pids)]
            owner["prev_active"].append(task)
            if task in stateful:
                owner["task_offset_sums"][task] = -2
        holder = clients[rng.choice(pids)]
        if task in stateful and rng.random() < 0.5 and task not in holder["prev_active"]:
            holder["prev_standby"].append(task)
            holder["task_offset_sums"][task] = 500
    return {
        "config": {"num_standby_replicas": rng.randint(1, 2)},
        "tasks": {"stateless": stateless, "stateful": stateful},
        "changelog_end_offset_sums": dict.fromkeys(stateful, 1000),
        "clients": clients,
    }


@pytest.mark.parametrize("assignor", ASSIGNORS)
def test_streamlet_matches_oracle_at_sweep_scale(oracle: Oracle, assignor: str) -> None:
    rng = random.Random(28)
    cases = [{**_sweep_scale_case(rng, n, s), "assignor": assignor} for n, s in ((100, 20), (60, 5))]
    assert_no_mismatch(mismatches(oracle, cases, assignor), len(cases), assignor)


# --- hand-written and design cases ----------------------------------------------------------------------

DESIGN_CASES = [json.loads(p.read_text()) for p in sorted(ASSIGNMENT_CASES.glob("seed000-*.json"))]
RESEARCH = json.loads((ASSIGNMENT_CASES / "kafka-streams-assignor-cases.json").read_text())
RESEARCH_CASES = [research_case_to_contract(c) for c in RESEARCH["assignor_cases"]]


@pytest.mark.parametrize("assignor", ASSIGNORS)
def test_streamlet_matches_oracle_on_design_and_research_cases(oracle: Oracle, assignor: str) -> None:
    cases = [{**case, "assignor": assignor} for case in DESIGN_CASES + RESEARCH_CASES]
    assert len(cases) == 27
    assert_no_mismatch(mismatches(oracle, cases, assignor), len(cases), assignor)


def _case(assignor: str, clients: dict[str, dict[str, Any]], stateful: list[str], **config: int) -> dict[str, Any]:
    return {
        "assignor": assignor,
        "config": {"num_standby_replicas": 0, **config},
        "tasks": {"stateless": [], "stateful": stateful},
        "changelog_end_offset_sums": dict.fromkeys(stateful, 100),
        "clients": {
            pid: {"capacity": 1, **c, "task_offset_sums": {**dict.fromkeys(c.get("prev_standby", []), 90)}}
            for pid, c in clients.items()
        },
    }


def _run_both(oracle: Oracle, case: dict[str, Any]) -> dict[str, Any]:
    """The oracle's output, after checking streamlet gives the same."""
    expected = normalize_output(oracle.run(case))
    assert normalize_output(simulate(case, case["assignor"])) == expected, dump(case)
    return expected


FOUR = ["0_0", "0_1", "0_2", "0_3"]


def test_sticky_keeps_previous_actives_up_to_the_quota_and_moves_the_rest(oracle: Oracle) -> None:
    """4 tasks over 2 threads: quota 2 per thread, so PID_1 keeps 2 of its 4 and PID_2 (new) gets 2."""
    case = _case("sticky", {PID[0]: {"prev_active": FOUR}, PID[1]: {}}, FOUR)
    out = _run_both(oracle, case)["clients"]
    assert len(out[PID[0]]["active"]) == len(out[PID[1]]["active"]) == 2
    assert set(out[PID[0]]["active"]) < set(FOUR)


def test_fallback_prior_keeps_every_previous_active_and_probes_later(oracle: Oracle) -> None:
    case = _case("fallback_prior", {PID[0]: {"prev_active": FOUR}, PID[1]: {}}, FOUR)
    out = _run_both(oracle, case)
    assert out["clients"][PID[0]]["active"] == FOUR
    assert out["followup_rebalance_ms"] == 600_000  # probing.rebalance.interval.ms, not an immediate one


def test_preserving_sticky_keeps_every_previous_active_and_rebalances_at_once(oracle: Oracle) -> None:
    case = {**_case("sticky", {PID[0]: {"prev_active": FOUR}, PID[1]: {}}, FOUR)}
    case["must_preserve_active_task_assignment"] = True
    expected = normalize_output(oracle.run(case))
    assert normalize_output(simulate(case, StickyTaskAssignor(True))) == expected
    assert expected["clients"][PID[0]]["active"] == FOUR
    assert expected["followup_rebalance_ms"] == 0  # Instant.ofEpochMilli(0): immediately


@pytest.mark.parametrize("assignor", ASSIGNORS)
def test_a_previous_standby_takes_over_from_a_departed_owner(oracle: Oracle, assignor: str) -> None:
    """PID_9 owned 0_0 and left; PID_2 had its standby, PID_1 nothing: PID_2 gets the active."""
    case = _case(assignor, {PID[0]: {"prev_active": ["0_1"]}, PID[1]: {"prev_standby": ["0_0"]}}, ["0_0", "0_1"])
    out = _run_both(oracle, case)["clients"]
    assert out[PID[1]]["active"] == ["0_0"]
    assert out[PID[0]]["active"] == ["0_1"]


@pytest.mark.parametrize("assignor", ASSIGNORS)
def test_standbys_stop_at_the_number_of_other_clients(oracle: Oracle, assignor: str) -> None:
    """Two clients, two replicas asked: each task gets one standby, never next to its active."""
    case = _case(assignor, {PID[0]: {"capacity": 2}, PID[1]: {}}, FOUR, num_standby_replicas=2)
    out = _run_both(oracle, case)["clients"]
    for task in FOUR:
        holders = [pid for pid, c in out.items() for kind in ("active", "standby") if task in c[kind]]
        assert sorted(holders) == [PID[0], PID[1]]


@pytest.mark.parametrize("assignor", ASSIGNORS)
def test_many_clients_walk_their_hash_order(oracle: Oracle, assignor: str) -> None:
    """14 idle single-thread clients and 3 stateful tasks with 2 standbys: every pick is a tie broken by
    the order Java meets clients in (HashMap of 14 ids in 32 buckets; candidate sets of 11-13 ids)."""
    pids = [f"{n:08x}-0000-0000-0000-{n * 7919:012x}" for n in range(1, 15)]
    case = _case(assignor, dict.fromkeys(pids, {}), ["0_0", "0_1", "0_2"], num_standby_replicas=2)
    out = _run_both(oracle, case)["clients"]
    assert sum(len(c["active"]) + len(c["standby"]) for c in out.values()) == 9
