"""A foreign-key table-table left join on the real broker, across a restart on an empty state directory.

Orders (order -> "customer:item", 4 partitions) are joined with customers (customer -> name, 3 partitions:
a foreign-key join needs no co-partitioning) by the customer named in each order. The expected result is
computed here, independently of streamlet, from the final tables. After the restart every store, the
foreign side's subscription store included, is restored from its changelog: a renamed customer must then
reach every order subscribed to it, an order moving to another customer must leave the old one (a later
rename of the old customer must not reach it), and a deleted order must end as a tombstone.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from streamlet.config import StreamsConfig
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.topology import StreamsBuilder, Topology
from tests.integration.state.test_durability import RecordingRestoreListener
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.waiting import poll_until

pytestmark = pytest.mark.integration

ORDER_PARTITIONS = 4
CUSTOMER_PARTITIONS = 3


def _topology(orders: str, customers: str, enriched: str) -> Topology:
    builder = StreamsBuilder()
    order_table = builder.table(orders, "str", "str", "orders")
    customer_table = builder.table(customers, "str", "str", "customers")
    joined = order_table.left_join(
        customer_table,
        lambda order: order.split(":")[0],
        lambda order, name: f"{order.split(':')[1]} for {name}",
        name="enrich",
    )
    joined.to_stream().to(enriched, "str", "str")
    return builder.build()


def _config(kafka: KafkaTestCluster, app_id: str, state_dir: Path) -> StreamsConfig:
    return StreamsConfig(
        application_id=app_id,
        bootstrap_servers=kafka.bootstrap_servers,
        state_dir=str(state_dir),
        num_stream_threads=2,
        commit_interval_ms=200,
    )


def _expected(orders: dict[str, str], customers: dict[str, str]) -> dict[str, str]:
    """The left join, computed directly: every order, with its customer's name or None."""
    result = {}
    for order, value in orders.items():
        customer, item = value.split(":")
        result[order] = f"{item} for {customers.get(customer)}"
    return result


async def _latest(kafka: KafkaTestCluster, topic: str) -> dict[str, str | None]:
    records = await kafka.drain(topic, ORDER_PARTITIONS)
    return {r.key.decode(): None if r.value is None else r.value.decode() for r in records}


async def _wait_for(kafka: KafkaTestCluster, topic: str, expected: dict[str, str]) -> dict[str, str]:
    """The keys of `topic` whose latest value is not a tombstone, once they equal `expected` (or at the timeout)."""

    async def present() -> dict[str, str]:
        return {k: v for k, v in (await _latest(kafka, topic)).items() if v is not None}

    return await poll_until(present, lambda found: found == expected)


async def _produce(kafka: KafkaTestCluster, topic: str, rows: list[tuple[str, str | None]]) -> None:
    await kafka.produce(topic, rows)


def _apply(table: dict[str, str], rows: list[tuple[str, str | None]]) -> None:
    for key, value in rows:
        if value is None:
            table.pop(key, None)
        else:
            table[key] = value


async def test_a_foreign_key_join_follows_both_tables_across_a_restart(kafka: KafkaTestCluster, tmp_path: Path) -> None:
    orders_topic = await kafka.create_topic("orders", partitions=ORDER_PARTITIONS)
    customers_topic = await kafka.create_topic("customers", partitions=CUSTOMER_PARTITIONS)
    enriched = await kafka.create_topic("enriched", partitions=ORDER_PARTITIONS)
    app_id = unique_name("fkjoin")
    for internal in (
        "enrich-subscription-registration-topic",
        "enrich-subscription-response-topic",
        "enrich-subscription-store-changelog",
        "orders-changelog",
        "customers-changelog",
    ):
        kafka.track(f"{app_id}-{internal}")
    topology = _topology(orders_topic, customers_topic, enriched)

    customers = {f"c{i}": f"Customer-{i}" for i in range(8)}  # c8, c9 have orders but no customer row
    orders = {f"o{i}": f"c{i % 10}:item{i}" for i in range(60)}
    client = KafkaStreams(topology, _config(kafka, app_id, tmp_path / "first"))
    await client.start()
    try:
        await _produce(kafka, customers_topic, list(customers.items()))
        await _produce(kafka, orders_topic, list(orders.items()))
        expected = _expected(orders, customers)
        assert await _wait_for(kafka, enriched, expected) == expected
    finally:
        await client.close()

    listener = RecordingRestoreListener()
    client = KafkaStreams(topology, _config(kafka, app_id, tmp_path / "second"), restore_listener=listener)
    await client.start()
    try:
        # orders: some move from c1 to c2, some are deleted, new ones arrive (one for the missing c9)
        order_changes: list[tuple[str, str | None]] = [(f"o{i}", f"c2:moved{i}") for i in range(1, 60, 10)]
        order_changes += [(f"o{i}", None) for i in range(3, 60, 10)]
        order_changes += [("o60", "c4:new60"), ("o61", "c9:new61")]
        await _produce(kafka, orders_topic, order_changes)
        _apply(orders, order_changes)
        expected = _expected(orders, customers)
        assert await _wait_for(kafka, enriched, expected) == expected
        # customers: renames fan out to every subscribed order (c1 has none left), c5 leaves, c9 arrives
        customer_changes: list[tuple[str, str | None]] = [("c1", "Renamed-1"), ("c2", "Renamed-2")]
        customer_changes += [("c4", "Renamed-4"), ("c5", None), ("c9", "Customer-9")]
        await _produce(kafka, customers_topic, customer_changes)
        _apply(customers, customer_changes)
        expected = _expected(orders, customers)
        assert "Renamed-1" not in "".join(expected.values()) and "moved11 for Renamed-2" in expected.values()
        assert await _wait_for(kafka, enriched, expected) == expected
        assert sum(listener.restored.values()) > 0  # the stores, subscriptions included, came from changelogs
        latest = await _latest(kafka, enriched)
        assert all(latest[f"o{i}"] is None for i in range(3, 60, 10))  # deleted orders: tombstones
    finally:
        await client.close()
