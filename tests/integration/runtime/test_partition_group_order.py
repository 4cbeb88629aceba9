"""A stream-table join over topics filled before the app starts: every order is joined with its customer.

The customers are stamped earlier than the orders that need them, but the orders were produced first and the
customers are too many for one fetch, so the first fetches hand the task orders together with only part of the
customers. Kafka Streams' task takes the head record with the smallest timestamp across its partitions and
waits for a partition whose records are still on the broker (KIP-695), so it processes every customer before
any order and joins them all; processing each fetched partition as a whole would join orders with nothing.
The expected output is computed here from the generated input.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from streamlet.config import StreamsConfig
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.topology import StreamsBuilder, Topology
from tests.support.kafka import KafkaTestCluster, Record, unique_name

pytestmark = pytest.mark.integration

CUSTOMERS = 2_000
PADDING = "x" * 1_000  # 2 MB of customers: several fetches (aiokafka fetches 1 MiB per partition)
ORDERS = 100


def _topology(orders: str, customers: str, out: str) -> Topology:
    builder = StreamsBuilder()
    table = builder.table(customers, "str", "str", "customers")
    builder.stream(orders, "str", "str").left_join(
        table, lambda order, customer: f"{order}|{None if customer is None else customer.split(':')[0]}"
    ).to(out, "str", "str")
    return builder.build()


async def _produce(kafka: KafkaTestCluster, topic: str, records: list[tuple[str, str, int]]) -> None:
    await kafka.produce(topic, [Record(k, v, timestamp_ms=ts, partition=0) for k, v, ts in records])


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once_v2"])  # lag from the LSO under the latter
async def test_orders_fetched_before_their_earlier_customers_are_all_joined(
    kafka: KafkaTestCluster, tmp_path: Path, guarantee: str
) -> None:
    orders = await kafka.create_topic("orders")
    customers = await kafka.create_topic("customers")
    out = await kafka.create_topic("enriched")
    app_id = unique_name("ordered-join")
    kafka.track(f"{app_id}-customers-changelog")

    base = int(time.time() * 1000) - 60_000
    needed = range(CUSTOMERS - ORDERS, CUSTOMERS)  # the orders need the last customers, fetched last
    await _produce(kafka, orders, [(f"c{c}", f"order-{i}", base + 10_000 + i) for i, c in enumerate(needed)])
    await _produce(kafka, customers, [(f"c{c}", f"customer-{c}:{PADDING}", base + c) for c in range(CUSTOMERS)])
    expected = sorted((f"c{c}", f"order-{i}|customer-{c}") for i, c in enumerate(needed))

    config = StreamsConfig(
        application_id=app_id,
        bootstrap_servers=kafka.bootstrap_servers,
        state_dir=str(tmp_path),
        commit_interval_ms=200,
        processing_guarantee=guarantee,
    )
    client = KafkaStreams(_topology(orders, customers, out), config)
    await client.start()
    try:
        records = await kafka.drain(out, 1, expected=ORDERS, timeout=60, read_committed=True)
        assert sorted((r.key.decode(), r.value.decode()) for r in records) == expected
    finally:
        await client.close()


async def test_a_repartition_topic_written_in_transactions_does_not_hold_the_join_back(
    kafka: KafkaTestCluster, tmp_path: Path
) -> None:
    """Under exactly_once_v2 the orders reach the join through a repartition topic written in transactions, whose
    end is a commit marker: once its records are processed its fetched lag must be 0 (the position passes the
    marker), or the task would wait for it forever and hold back a customer update that comes later."""
    orders = await kafka.create_topic("orders")
    customers = await kafka.create_topic("customers")
    out = await kafka.create_topic("enriched")
    app_id = unique_name("txn-join")
    for suffix in ("customers-changelog", "orders-by-customer-repartition"):
        kafka.track(f"{app_id}-{suffix}")
    builder = StreamsBuilder()
    table = builder.table(customers, "str", "str", "customers")
    (
        builder.stream(orders, "str", "str")
        .select_key(lambda _key, order: order.split("@")[1])
        .repartition(name="orders-by-customer")
        .left_join(table, lambda order, customer: f"{order}|{customer}")
        .to(out, "str", "str")
    )
    config = StreamsConfig(
        application_id=app_id,
        bootstrap_servers=kafka.bootstrap_servers,
        state_dir=str(tmp_path),
        commit_interval_ms=100,
        processing_guarantee="exactly_once_v2",
    )
    base = int(time.time() * 1000) - 60_000
    await _produce(kafka, customers, [("c1", "alice", base)])
    client = KafkaStreams(builder.build(), config)
    await client.start()
    try:
        await _produce(kafka, orders, [("o1", "order-1@c1", base + 1)])
        first = await kafka.drain(out, 1, expected=1, timeout=60, read_committed=True)
        assert [r.value.decode() for r in first] == ["order-1@c1|alice"]
        await asyncio.sleep(1)  # the repartition topic's transaction committed: its end is the commit marker
        await _produce(kafka, customers, [("c1", "alice-moved", base + 2)])
        # processed on its own, with no order after it to make the repartition partition non-empty
        changelog = await kafka.drain(f"{app_id}-customers-changelog", 1, expected=2, timeout=30, read_committed=True)
        assert [r.value for r in changelog] == [b"alice", b"alice-moved"]
        await _produce(kafka, orders, [("o2", "order-2@c1", base + 3)])
        both = await kafka.drain(out, 1, expected=2, timeout=60, read_committed=True)
        assert [r.value.decode() for r in both] == ["order-1@c1|alice", "order-2@c1|alice-moved"]
    finally:
        await client.close()
