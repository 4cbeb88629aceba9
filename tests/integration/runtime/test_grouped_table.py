"""A KTable re-grouped and counted on the real broker, restored from its changelogs by a fresh client.

Employees (employee -> department) are a table; `group_by(dept)` counts each department's employees and a
filter keeps the departments of at least three. The expected counts are computed here, independently of
streamlet, from the employees' final departments. After a restart with empty state, moves and departures
must subtract from the restored counts: a wrong restore of the source table (whose old values say which
department an employee leaves) or of the counts shows up as a wrong count.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from streamlet.config import StreamsConfig
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.serdes import LongSerde
from streamlet.topology import StreamsBuilder, Topology
from tests.integration.state.test_durability import RecordingRestoreListener
from tests.support.kafka import KafkaTestCluster, unique_name

pytestmark = pytest.mark.integration

PARTITIONS = 3
LARGE = 3


def _topology(employees: str, headcount: str, large: str) -> Topology:
    builder = StreamsBuilder()
    table = builder.table(employees, "str", "str")  # no store of its own: the grouping materializes it
    by_dept = table.group_by(lambda employee, dept: (dept, employee), "str", "str", name="by-dept")
    counts = by_dept.count("headcount")
    counts.to_stream().to(headcount, "str", "int64")
    counts.filter(lambda dept, n: n >= LARGE).to_stream().to(large, "str", "int64")
    return builder.build()


def _config(kafka: KafkaTestCluster, app_id: str, state_dir: Path) -> StreamsConfig:
    return StreamsConfig(
        application_id=app_id,
        bootstrap_servers=kafka.bootstrap_servers,
        state_dir=str(state_dir),
        num_stream_threads=2,
        commit_interval_ms=200,
    )


async def _latest(kafka: KafkaTestCluster, topic: str) -> dict[str, Any]:
    """The last value of each key in `topic` (None for a tombstone)."""
    longs = LongSerde()
    return {r.key.decode(): longs.deserialize(topic, r.value) for r in await kafka.drain(topic, PARTITIONS)}


async def _wait_for(
    kafka: KafkaTestCluster, topic: str, expected: dict[str, Any], *, present: bool = False
) -> dict[str, Any]:
    """The latest values of `topic` once they equal `expected` (or at the timeout); `present`: the keys whose
    latest value is not a tombstone."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while True:
        latest = await _latest(kafka, topic)
        if present:
            latest = {k: v for k, v in latest.items() if v is not None}
        if latest == expected or loop.time() > deadline:
            return latest
        await asyncio.sleep(0.3)


async def _produce(kafka: KafkaTestCluster, topic: str, rows: list[tuple[str, str | None]]) -> None:
    await kafka.produce(topic, [(k.encode(), None if v is None else v.encode()) for k, v in rows])


def _headcount(departments: dict[str, str], ever: set[str]) -> dict[str, int]:
    """Each department's employees; a department that emptied keeps its count of 0, as in Kafka."""
    counts = Counter(departments.values())
    return {dept: counts.get(dept, 0) for dept in ever}


async def test_a_grouped_table_count_follows_moves_and_departures_across_a_restart(
    kafka: KafkaTestCluster, tmp_path: Path
) -> None:
    employees = await kafka.create_topic("employees", partitions=PARTITIONS)
    headcount = await kafka.create_topic("headcount", partitions=PARTITIONS)
    large = await kafka.create_topic("large-departments", partitions=PARTITIONS)
    app_id = unique_name("headcount")
    for internal in ("by-dept-repartition", "headcount-changelog"):
        kafka.track(f"{app_id}-{internal}")
    topology = _topology(employees, headcount, large)
    source_changelog = [name for name in topology.stores if name != "headcount"]
    assert len(source_changelog) == 1  # the source table's generated store
    kafka.track(f"{app_id}-{source_changelog[0]}-changelog")

    departments = {f"e{i}": f"d{i % 7}" for i in range(40)}
    client = KafkaStreams(topology, _config(kafka, app_id, tmp_path / "first"))
    await client.start()
    try:
        await _produce(kafka, employees, list(departments.items()))
        expected = _headcount(departments, set(departments.values()))
        assert await _wait_for(kafka, headcount, expected) == expected
    finally:
        await client.close()

    listener = RecordingRestoreListener()
    client = KafkaStreams(topology, _config(kafka, app_id, tmp_path / "second"), restore_listener=listener)
    await client.start()
    try:
        # moves (some into a new department), departures, a re-hire, and d6 emptied entirely
        changes: list[tuple[str, str | None]] = [(f"e{i}", "d1") for i in range(0, 40, 7)]  # d0 -> d1
        changes += [(f"e{i}", None) for i in range(6, 40, 7)]  # d6 leaves
        changes += [("e2", "d9"), ("e9", "d9"), ("e3", None), ("e3", "d3"), ("e40", "d9")]
        await _produce(kafka, employees, changes)
        ever = set(departments.values()) | {"d9"}
        for employee, dept in changes:
            if dept is None:
                departments.pop(employee, None)
            else:
                departments[employee] = dept
        expected = _headcount(departments, ever)
        assert expected["d0"] == 0 and expected["d6"] == 0 and expected["d9"] == 3
        assert await _wait_for(kafka, headcount, expected) == expected
        assert sum(listener.restored.values()) > 0  # the counts and the source table came from changelogs
        # a department below LARGE is absent from the filtered table or deleted from it
        expected_large = {d: n for d, n in expected.items() if n >= LARGE}
        assert await _wait_for(kafka, large, expected_large, present=True) == expected_large
    finally:
        await client.close()
