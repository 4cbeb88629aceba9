"""KIP-925 rack-aware HATA in the unit tier: Kafka Streams' recorded outputs, what they show, and when it is off.

The expected assignments were recorded from the oracle (Kafka Streams 4.1.1's HATA with a real
`RackAwareTaskAssignor`); the oracle tier checks the recording still matches the JVM.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from streamlet.assignment.api import AssignmentConfigs
from streamlet.assignment.rack_aware import RackAwareTaskAssignor
from streamlet.assignment.simulation import SimulationInputError, simulate
from streamlet.config import StreamsConfig
from streamlet.errors import ConfigError
from streamlet.task_id import TaskId
from tests.support.fixtures import ASSIGNMENT_CASES
from tests.support.oracle import normalize_output

RECORDED = json.loads((ASSIGNMENT_CASES / "kip925-rack-aware-hata.json").read_text())["cases"]
BY_NAME = {r["name"]: r for r in RECORDED}
A = "00000000-0000-0000-0000-000000000001"
B = "00000000-0000-0000-0000-000000000002"


@pytest.mark.parametrize("recorded", RECORDED, ids=[r["name"] for r in RECORDED])
def test_streamlet_reproduces_kafka_streams_recorded_output(recorded: dict[str, Any]) -> None:
    assert normalize_output(simulate(recorded["case"])) == normalize_output(recorded["expected"])


def _actives(recorded: dict[str, Any]) -> dict[str, list[str]]:
    return {pid: c["active"] for pid, c in recorded["expected"]["clients"].items()}


def test_min_traffic_moves_each_task_to_the_rack_of_its_partition() -> None:
    """0_0 reads a partition in rack-b, 0_1 one in rack-a: round robin had them the other way round."""
    assert _actives(BY_NAME["min-traffic-swaps-actives-to-their-racks"]) == {A: ["0_1"], B: ["0_0"]}


@pytest.mark.parametrize(
    "name",
    [
        "client-without-rack-leaves-it-off",
        "replica-without-rack-leaves-it-off",
        "zero-traffic-cost-keeps-hata-assignment",
    ],
)
def test_incomplete_racks_or_free_traffic_keep_the_round_robin(name: str) -> None:
    assert _actives(BY_NAME[name]) == {A: ["0_0"], B: ["0_1"]}


def test_balance_subtopology_keeps_each_subtopology_spread_where_min_traffic_groups_it() -> None:
    assert _actives(BY_NAME["min-traffic-groups-subtopologies-by-rack"]) == {A: ["0_0", "0_1"], B: ["1_0", "1_1"]}
    assert _actives(BY_NAME["balance-subtopology-spreads-each-subtopology"]) == {A: ["0_0", "1_0"], B: ["0_1", "1_1"]}


@pytest.mark.parametrize("name", ["standbys-swap-towards-their-changelog-racks", "standbys-with-balance-subtopology"])
def test_standbys_end_on_the_rack_of_their_changelog(name: str) -> None:
    recorded = BY_NAME[name]
    case = recorded["case"]
    racks = case["partition_replica_racks"]["app-store-changelog"]
    for pid, tasks in recorded["expected"]["clients"].items():
        for task in tasks["standby"]:
            assert case["clients"][pid]["rack"] in racks[int(task.split("_")[1])], (pid, task)


def _assignor(**overrides: Any) -> RackAwareTaskAssignor:
    t = TaskId(0, 0)
    args: dict[str, Any] = {
        "rack_for_process": {uuid.UUID(A): "rack-a"},
        "source_partitions": {t: [("in", 0)]},
        "changelog_partitions": {t: [("cl", 0)]},
        "racks_for_partition": {("in", 0): frozenset({"rack-a"}), ("cl", 0): frozenset({"rack-b"})},
        "tasks_per_subtopology": [[t]],
        "num_standby_replicas": 1,
    }
    args.update(overrides)
    return RackAwareTaskAssignor(args.pop("strategy", "min_traffic"), **args)


def test_can_enable_needs_every_rack() -> None:
    assert _assignor().can_enable()
    assert not _assignor(strategy="none").can_enable()
    assert not _assignor(rack_for_process={uuid.UUID(A): None}).can_enable()
    assert not _assignor(racks_for_partition={("in", 0): frozenset({"rack-a"})}).can_enable()  # changelog unknown
    assert _assignor(racks_for_partition={("in", 0): frozenset({"rack-a"})}, num_standby_replicas=0).can_enable()
    assert not _assignor(racks_for_partition={("in", 0): None, ("cl", 0): frozenset({"b"})}).can_enable()


def test_cost_counts_partitions_outside_the_rack_and_the_move() -> None:
    assignor = _assignor(
        source_partitions={TaskId(0, 0): [("in", 0), ("in2", 0)]},
        racks_for_partition={("in", 0): frozenset({"rack-a"}), ("in2", 0): frozenset({"rack-c"})},
    )
    assert assignor.cost(TaskId(0, 0), uuid.UUID(A), True, 10, 1, False) == 10
    assert assignor.cost(TaskId(0, 0), uuid.UUID(A), False, 10, 1, False) == 11


def test_configs_reject_unknown_strategies_and_negative_costs() -> None:
    with pytest.raises(ConfigError, match="rack_aware_assignment_strategy"):
        AssignmentConfigs(rack_aware_assignment_strategy="fastest")
    with pytest.raises(ConfigError, match="traffic_cost"):
        AssignmentConfigs(rack_aware_assignment_traffic_cost=-1)
    with pytest.raises(ConfigError, match="rack_aware_assignment_strategy"):
        StreamsConfig.from_mapping({"application.id": "a", "rack.aware.assignment.strategy": "fastest"})
    config = StreamsConfig.from_mapping(
        {"application.id": "a", "client.rack": "rack-a", "rack.aware.assignment.strategy": "balance_subtopology"}
    )
    assert config.client_rack == "rack-a"
    assert AssignmentConfigs.from_streams_config(config).rack_aware_assignment_strategy == "balance_subtopology"


def test_simulation_rejects_malformed_partitions() -> None:
    case = json.loads(json.dumps(BY_NAME["min-traffic-swaps-actives-to-their-racks"]["case"]))
    case["task_partitions"]["0_0"]["source"] = [["in", -1]]
    with pytest.raises(SimulationInputError, match=r"task_partitions.0_0.source"):
        simulate(case)


def test_registered_rack_aware_variants_are_hata_with_that_strategy() -> None:
    recorded = BY_NAME["min-traffic-swaps-actives-to-their-racks"]
    case = {**recorded["case"], "config": {**recorded["case"]["config"], "rack_aware_assignment_strategy": "none"}}
    assert normalize_output(simulate(case, "high_availability_min_traffic")) == normalize_output(recorded["expected"])
    assert normalize_output(simulate(case, "high_availability")) != normalize_output(recorded["expected"])
