"""A KTable re-grouped and counted, and joined with another table, on the real broker, restored from its
changelogs by a fresh client.

Employees (employee -> department) are a table; `group_by(dept)` counts each department's employees, a
filter keeps the departments of at least three, and the departments table (department -> name) is joined
with the counts. The expected counts are computed here, independently of
streamlet, from the employees' final departments. After a restart with empty state, moves and departures
must subtract from the restored counts: a wrong restore of the source table (whose old values say which
department an employee leaves) or of the counts shows up as a wrong count.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from streamlet.config import StreamsConfig
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.serdes import LongSerde, Serde, StringSerde
from streamlet.topology import StreamsBuilder, Topology
from tests.integration.state.test_durability import RecordingRestoreListener
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.waiting import poll_until

pytestmark = pytest.mark.integration

PARTITIONS = 3
LARGE = 3


def _topology(employees: str, departments: str, headcount: str, large: str, staffed: str) -> Topology:
    builder = StreamsBuilder()
    table = builder.table(employees, "str", "str")  # no store of its own: the grouping materializes it
    by_dept = table.group_by(lambda employee, dept: (dept, employee), "str", "str", name="by-dept")
    counts = by_dept.count("headcount")
    counts.to_stream().to(headcount, "str", "int64")
    counts.filter(lambda dept, n: n >= LARGE).to_stream().to(large, "str", "int64")
    names = builder.table(departments, "str", "str", "departments")
    names.join(counts, lambda name, n: f"{name}:{n}").to_stream().to(staffed, "str", "str")
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
    """The last value of each key in `topic` (None for a tombstone); the staffed topic holds strings."""
    serde: Serde = StringSerde() if "staffed" in topic else LongSerde()
    return {r.key.decode(): serde.deserialize(topic, r.value) for r in await kafka.drain(topic, PARTITIONS)}


async def _wait_for(
    kafka: KafkaTestCluster, topic: str, expected: dict[str, Any], *, present: bool = False
) -> dict[str, Any]:
    """The latest values of `topic` once they equal `expected` (or at the timeout); `present`: the keys whose
    latest value is not a tombstone."""

    async def latest() -> dict[str, Any]:
        found = await _latest(kafka, topic)
        return {k: v for k, v in found.items() if v is not None} if present else found

    return await poll_until(latest, lambda found: found == expected)


async def _produce(kafka: KafkaTestCluster, topic: str, rows: list[tuple[str, str | None]]) -> None:
    await kafka.produce(topic, rows)


def _headcount(departments: dict[str, str], ever: set[str]) -> dict[str, int]:
    """Each department's employees; a department that emptied keeps its count of 0, as in Kafka."""
    counts = Counter(departments.values())
    return {dept: counts.get(dept, 0) for dept in ever}


async def test_a_grouped_table_count_and_a_table_join_follow_updates_across_a_restart(
    kafka: KafkaTestCluster, tmp_path: Path
) -> None:
    employees = await kafka.create_topic("employees", partitions=PARTITIONS)
    headcount = await kafka.create_topic("headcount", partitions=PARTITIONS)
    large = await kafka.create_topic("large-departments", partitions=PARTITIONS)
    departments = await kafka.create_topic("departments", partitions=PARTITIONS)
    staffed = await kafka.create_topic("staffed", partitions=PARTITIONS)
    app_id = unique_name("headcount")
    for internal in ("by-dept-repartition", "headcount-changelog", "departments-changelog"):
        kafka.track(f"{app_id}-{internal}")
    topology = _topology(employees, departments, headcount, large, staffed)
    source_changelog = [name for name in topology.stores if name not in ("headcount", "departments")]
    assert len(source_changelog) == 1  # the source table's generated store
    kafka.track(f"{app_id}-{source_changelog[0]}-changelog")

    works_in = {f"e{i}": f"d{i % 7}" for i in range(40)}
    names = {f"d{i}": f"Dept-{i}" for i in range(10)}  # d7, d8 never have anyone: no join result
    client = KafkaStreams(topology, _config(kafka, app_id, tmp_path / "first"))
    await client.start()
    try:
        await _produce(kafka, departments, list(names.items()))
        await _produce(kafka, employees, list(works_in.items()))
        expected = _headcount(works_in, set(works_in.values()))
        assert await _wait_for(kafka, headcount, expected) == expected
        expected_staffed = {d: f"{names[d]}:{n}" for d, n in expected.items()}
        assert await _wait_for(kafka, staffed, expected_staffed) == expected_staffed
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
        await _produce(kafka, departments, [("d1", "Dept-1-renamed"), ("d5", None)])
        ever = set(works_in.values()) | {"d9"}
        for employee, dept in changes:
            if dept is None:
                works_in.pop(employee, None)
            else:
                works_in[employee] = dept
        names["d1"] = "Dept-1-renamed"
        del names["d5"]
        expected = _headcount(works_in, ever)
        assert expected["d0"] == 0 and expected["d6"] == 0 and expected["d9"] == 3
        assert await _wait_for(kafka, headcount, expected) == expected
        assert sum(listener.restored.values()) > 0  # the counts and the source table came from changelogs
        # a department below LARGE is absent from the filtered table or deleted from it
        expected_large = {d: n for d, n in expected.items() if n >= LARGE}
        assert await _wait_for(kafka, large, expected_large, present=True) == expected_large
        # the join: renamed d1, d5 deleted (a tombstone), every other department with its new count
        expected_staffed = {d: f"{names[d]}:{n}" for d, n in expected.items() if d in names}
        assert await _wait_for(kafka, staffed, expected_staffed, present=True) == expected_staffed
        assert (await _latest(kafka, staffed))["d5"] is None
    finally:
        await client.close()
