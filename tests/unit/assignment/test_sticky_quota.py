"""The StickyTaskAssignor's active quota changed in Kafka Streams 4.4: a client keeps previous (and previous
standby) tasks up to its share of all tasks rounded up, `ceil(tasks * threads / total threads)`, where up to 4.3
it was `threads * (tasks // total threads)`, rounded down (docs/kafka-4.4.md).

The expected assignment was recorded from Kafka Streams 4.4.0's own class (the oracle, tests/oracle/assignment)
on the research case HA_shouldDistributeStatelessTasksToBalanceTotalTaskLoad; Kafka Streams 4.1.1 gave
client 1 three stateful actives and a standby instead.
"""

from __future__ import annotations

from streamlet.assignment.simulation import simulate
from tests.support.oracle import normalize_output

LONG_MAX = 2**63 - 1
CLIENT_1 = "00000000-0000-0000-0000-000000000001"
CLIENT_2 = "00000000-0000-0000-0000-000000000002"
STATEFUL = ["0_0", "0_1", "0_2", "0_3"]

CASE = {
    "name": "HA_shouldDistributeStatelessTasksToBalanceTotalTaskLoad",
    "config": {
        "num_standby_replicas": 1,
        "max_warmup_replicas": 2,
        "acceptable_recovery_lag": 100,
        "probing_rebalance_interval_ms": 600_000,
    },
    "tasks": {"stateless": ["1_0", "1_1", "1_2"], "stateful": STATEFUL},
    "changelog_end_offset_sums": dict.fromkeys(STATEFUL, LONG_MAX),
    "clients": {
        # client 1 holds every stateful task's state (a previous standby of each), client 2 none
        CLIENT_1: {
            "capacity": 1,
            "prev_active": [],
            "prev_standby": [],
            "task_offset_sums": dict.fromkeys(STATEFUL, LONG_MAX),
        },
        CLIENT_2: {"capacity": 1, "prev_active": [], "prev_standby": [], "task_offset_sums": {}},
    },
}


def test_a_client_keeps_its_rounded_up_share_of_the_tasks() -> None:
    # 7 tasks over 2 threads: client 1 may keep ceil(7 / 2) = 4 actives (4.1.1: 1 * (7 // 2) = 3)
    assert normalize_output(simulate(CASE, "sticky")) == {
        "clients": {
            CLIENT_1: {"active": STATEFUL, "standby": []},
            CLIENT_2: {"active": ["1_0", "1_1", "1_2"], "standby": STATEFUL},
        },
        "followup_rebalance_ms": None,
    }
