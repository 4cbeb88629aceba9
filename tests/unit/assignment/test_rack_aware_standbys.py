"""KIP-708 rack-aware standbys in the unit tier: Kafka Streams' recorded outputs, and what they show.

The expected assignments were recorded from the oracle (Kafka Streams 4.1.1's HATA with
`ClientTagAwareStandbyTaskAssignor`); the oracle tier checks the recording still matches the JVM.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from streamlet.assignment.simulation import simulate
from tests.support.fixtures import ASSIGNMENT_CASES
from tests.support.oracle import normalize_output

RECORDED = json.loads((ASSIGNMENT_CASES / "kip708-rack-aware-standbys.json").read_text())["cases"]
BY_NAME = {r["name"]: r for r in RECORDED}


@pytest.mark.parametrize("recorded", RECORDED, ids=[r["name"] for r in RECORDED])
def test_streamlet_reproduces_kafka_streams_recorded_output(recorded: dict[str, Any]) -> None:
    assert normalize_output(simulate(recorded["case"])) == normalize_output(recorded["expected"])


def _copies_by_task(recorded: dict[str, Any]) -> dict[str, list[str]]:
    """Per task, the clients holding it (active first)."""
    copies: dict[str, list[str]] = {}
    for kind in ("active", "standby"):
        for pid, tasks in recorded["expected"]["clients"].items():
            for task in tasks[kind]:
                copies.setdefault(task, []).append(pid)
    return copies


def test_kafka_streams_spreads_both_standbys_over_zones_when_it_can() -> None:
    """Kafka Streams' own example: 3 zones x 2 clusters, 2 standbys: every copy of a task in its own zone."""
    recorded = BY_NAME["zones-x-clusters-two-standbys"]
    tags = {pid: c["client_tags"] for pid, c in recorded["case"]["clients"].items()}
    for task, holders in _copies_by_task(recorded).items():
        assert len(holders) == 3, task
        assert len({tags[p]["zone"] for p in holders}) == 3, task


def test_one_zone_falls_back_to_least_loaded_clients() -> None:
    recorded = BY_NAME["one-zone-fallback"]
    assert all(len(holders) == 3 for holders in _copies_by_task(recorded).values())
