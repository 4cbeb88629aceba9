"""Orders joined with a customers KTable on the real broker, and the table restored from its changelog.

The expected output is computed here, independently of streamlet: each order's value joined with its
customer's latest value (None when the customer is missing or deleted), since every customer update is in the
table before the orders that must see it are produced.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from streamlet.config import StreamsConfig
from streamlet.errors import TopologyError
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.topology import StreamsBuilder, Topology
from tests.integration.state.test_durability import RecordingRestoreListener
from tests.support.clients import wait_for_committed
from tests.support.kafka import KafkaTestCluster, unique_name

pytestmark = pytest.mark.integration

PARTITIONS = 3


def _topology(orders: str, customers: str, out: str) -> Topology:
    builder = StreamsBuilder()
    table = builder.table(customers, "str", "str", "customers")
    builder.stream(orders, "str", "str").left_join(table, lambda o, c: f"{o}|{c}").to(out, "str", "str")
    return builder.build()


def _config(kafka: KafkaTestCluster, app_id: str, state_dir: Path) -> StreamsConfig:
    return StreamsConfig(
        application_id=app_id,
        bootstrap_servers=kafka.bootstrap_servers,
        state_dir=str(state_dir),
        num_stream_threads=2,
        commit_interval_ms=200,
    )


async def _wait_for_changelog(kafka: KafkaTestCluster, changelog: str, records: int) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60
    while sum((await kafka.end_offsets(changelog, PARTITIONS)).values()) < records:
        assert loop.time() < deadline, f"{changelog} never reached {records} records"
        await asyncio.sleep(0.2)


def _enriched(orders: list[tuple[str, str]], customers: dict[str, str]) -> list[tuple[str, str]]:
    return sorted((cid, f"{order}|{customers.get(cid)}") for cid, order in orders)


async def _read(kafka: KafkaTestCluster, topic: str, expected: int) -> list[tuple[str, str]]:
    records = await kafka.drain(topic, PARTITIONS, expected=expected, timeout=60)
    return sorted((r.key.decode(), r.value.decode()) for r in records)


async def test_orders_left_join_customers_and_the_table_survives_a_restart(
    kafka: KafkaTestCluster, tmp_path: Path
) -> None:
    orders = await kafka.create_topic("orders", partitions=PARTITIONS)
    customers = await kafka.create_topic("customers", partitions=PARTITIONS)
    out = await kafka.create_topic("enriched", partitions=PARTITIONS)
    app_id = unique_name("enrich")
    changelog = f"{app_id}-customers-changelog"
    kafka.track(changelog)
    topology = _topology(orders, customers, out)

    table = {f"c{i}": f"customer-{i}" for i in range(20)}
    first = [(f"c{i % 25}", f"order-{i}") for i in range(100)]  # c20..c24 have no customer
    client = KafkaStreams(topology, _config(kafka, app_id, tmp_path / "first"))
    await client.start()
    try:
        await kafka.produce(customers, [(k.encode(), v.encode()) for k, v in table.items()])
        await _wait_for_changelog(kafka, changelog, len(table))
        await kafka.produce(orders, [(k.encode(), v.encode()) for k, v in first])
        expected = _enriched(first, table)
        assert await _read(kafka, out, len(first)) == expected
    finally:
        await client.close()

    # a new client with empty state restores the table from its changelog, then continues from its offsets
    stored = len(table)  # changelog records the first client wrote, one per customer
    listener = RecordingRestoreListener()
    client = KafkaStreams(topology, _config(kafka, app_id, tmp_path / "second"), restore_listener=listener)
    await client.start()
    try:
        updates = [("c1", "customer-1-moved"), ("c2", None)]
        await kafka.produce(customers, [(k.encode(), None if v is None else v.encode()) for k, v in updates])
        await _wait_for_changelog(kafka, changelog, len(table) + len(updates))
        second = [(f"c{i % 25}", f"order-{i}") for i in range(100, 160)]
        await kafka.produce(orders, [(k.encode(), v.encode()) for k, v in second])
        table["c1"] = "customer-1-moved"
        del table["c2"]
        expected += _enriched(second, table)
        assert await _read(kafka, out, len(first) + len(second)) == sorted(expected)
        assert sum(listener.restored.values()) == stored
    finally:
        await client.close()


async def test_join_of_topics_with_different_partition_counts_fails_at_start(
    kafka: KafkaTestCluster, tmp_path: Path
) -> None:
    orders = await kafka.create_topic("orders", partitions=2)
    customers = await kafka.create_topic("customers", partitions=PARTITIONS)
    app_id = unique_name("enrich-mismatch")
    client = KafkaStreams(_topology(orders, customers, "unused"), _config(kafka, app_id, tmp_path))
    try:
        with pytest.raises(TopologyError, match=rf"{orders} \(2 partitions\), {customers} \(3 partitions\)"):
            await client.start()
    finally:
        await client.close()


async def test_with_reused_source_topics_the_table_is_restored_from_its_topic(
    kafka: KafkaTestCluster, tmp_path: Path
) -> None:
    """`reuse.ktable.source.topics`: no changelog topic; a client on an empty state directory restores the
    table from the customers topic itself, up to the committed offsets, and joins on as before."""
    orders = await kafka.create_topic("orders", partitions=PARTITIONS)
    customers = await kafka.create_topic("customers", partitions=PARTITIONS)
    out = await kafka.create_topic("enriched", partitions=PARTITIONS)
    app_id = unique_name("enrich-reuse")
    builder = StreamsBuilder()
    table = builder.table(customers, "str", "str", "customers")
    builder.stream(orders, "str", "str").left_join(table, lambda o, c: f"{o}|{c}").to(out, "str", "str")
    topology = builder.build("reuse.ktable.source.topics")

    customer_values = {f"c{i}": f"customer-{i}" for i in range(20)}
    first = [(f"c{i % 25}", f"order-{i}") for i in range(100)]
    client = KafkaStreams(topology, _config(kafka, app_id, tmp_path / "first"))
    await client.start()
    try:
        await kafka.produce(customers, [(k.encode(), v.encode()) for k, v in customer_values.items()])
        await wait_for_committed(kafka, app_id, customers, len(customer_values))
        await kafka.produce(orders, [(k.encode(), v.encode()) for k, v in first])
        expected = _enriched(first, customer_values)
        assert await _read(kafka, out, len(first)) == expected
    finally:
        await client.close()
    topics = set(await kafka.admin.list_topics())
    assert not [t for t in topics if t.startswith(app_id) and t.endswith("-changelog")]

    listener = RecordingRestoreListener()
    client = KafkaStreams(topology, _config(kafka, app_id, tmp_path / "second"), restore_listener=listener)
    await client.start()
    try:
        second = [(f"c{i % 25}", f"order-{i}") for i in range(100, 160)]
        await kafka.produce(orders, [(k.encode(), v.encode()) for k, v in second])
        expected += _enriched(second, customer_values)
        assert await _read(kafka, out, len(first) + len(second)) == sorted(expected)
        # read back from the customers topic
        assert sum(listener.restored.values()) == len(customer_values), (listener.restored, listener.starts)
        assert {tp.topic for tp in listener.restored} == {customers}
    finally:
        await client.close()
    assert not [t for t in set(await kafka.admin.list_topics()) if t.startswith(app_id) and t.endswith("-changelog")]
