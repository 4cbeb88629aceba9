"""A foreign-key left join of tables whose topics are written with custom partitioners, on the real broker.

Orders (4 partitions) and customers (3 partitions) are written by number (`o7` and `c7` to partition 7 % n),
not by the default partitioner. Three applications join them at once:

* with `TableJoined.with_(by_number, by_number)`: every order is joined with its customer, since the
  subscriptions reach the customer's partition (`other_partitioner`);
* with the default partitioners: a subscription goes to the default partitioner's partition of its customer
  (murmur2), where the customer is not, so an order whose customer is placed differently by number gets None;
  responses still reach every order (they go back to the partition their subscription came from);
* with a partitioner sending every response to partition 0: only the orders of partition 0 are answered (a
  response elsewhere finds no order), which shows the responses go by `partitioner`.

The expected results are computed here from the rows and the two placements (murmur2 from aiokafka).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiokafka.partitioner import murmur2

from streamlet import TableJoined
from streamlet.config import StreamsConfig
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.topology import StreamsBuilder, Topology
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.waiting import poll_until

pytestmark = pytest.mark.integration

ORDER_PARTITIONS = 4
CUSTOMER_PARTITIONS = 3
CUSTOMERS = {f"c{i}": f"Customer-{i}" for i in range(12)}
ORDERS = {f"o{i}": f"c{i % 12}:item{i}" for i in range(40)}


def _by_number(key: str, num_partitions: int) -> int:
    return int(key[1:]) % num_partitions


def by_number(topic: str, key: Any, value: Any, num_partitions: int) -> int:
    return _by_number(key, num_partitions)


def to_partition_zero(topic: str, key: Any, value: Any, num_partitions: int) -> int:
    return 0


def _default_partition(key: str, num_partitions: int) -> int:
    return (murmur2(key.encode()) & 0x7FFFFFFF) % num_partitions


def _topology(orders: str, customers: str, enriched: str, table_joined: TableJoined | None) -> Topology:
    builder = StreamsBuilder()
    order_table = builder.table(orders, "str", "str", "orders")
    customer_table = builder.table(customers, "str", "str", "customers")
    joined = order_table.left_join(
        customer_table,
        lambda order: order.split(":")[0],
        lambda order, name: f"{order.split(':')[1]} for {name}",
        table_joined=(table_joined or TableJoined()).with_name("enrich"),
    )
    joined.to_stream().to(enriched, "str", "str")
    return builder.build()


def _placed_alike(customer: str) -> bool:
    """Whether the default partitioner puts `customer` where it is (by number)."""
    return _default_partition(customer, CUSTOMER_PARTITIONS) == _by_number(customer, CUSTOMER_PARTITIONS)


def _expected(found: Callable[[str], bool]) -> dict[str, str]:
    """The left join of ORDERS with the CUSTOMERS for which `found(customer)` holds."""
    result = {}
    for order, value in ORDERS.items():
        customer, item = value.split(":")
        result[order] = f"{item} for {CUSTOMERS[customer] if found(customer) else None}"
    return result


async def _produce_by_number(kafka: KafkaTestCluster, topic: str, rows: dict[str, str], partitions: int) -> None:
    for partition in range(partitions):
        records = [(k.encode(), v.encode()) for k, v in rows.items() if _by_number(k, partitions) == partition]
        await kafka.produce(topic, records, partition=partition)


async def _wait_for(kafka: KafkaTestCluster, topic: str, expected: dict[str, str]) -> dict[str, str]:
    """The latest values of `topic`, once they equal `expected` (or at the timeout)."""

    async def latest() -> dict[str, str]:
        records = await kafka.drain(topic, ORDER_PARTITIONS)
        return {r.key.decode(): r.value.decode() for r in records if r.value is not None}

    return await poll_until(latest, lambda found: found == expected)


async def test_table_joined_partitioners_place_subscriptions_and_responses(
    kafka: KafkaTestCluster, tmp_path: Path
) -> None:
    orders = await kafka.create_topic("orders", partitions=ORDER_PARTITIONS)
    customers = await kafka.create_topic("customers", partitions=CUSTOMER_PARTITIONS)
    joined = {
        "custom": TableJoined.with_(by_number, by_number),
        "default": None,
        "responses-to-zero": TableJoined.with_(to_partition_zero, by_number),
    }
    clients, outputs = {}, {}
    for label, table_joined in joined.items():
        app_id = unique_name(f"fk-{label}")
        for internal in (
            "enrich-subscription-registration-topic",
            "enrich-subscription-response-topic",
            "enrich-subscription-store-changelog",
            "orders-changelog",
            "customers-changelog",
        ):
            kafka.track(f"{app_id}-{internal}")
        outputs[label] = await kafka.create_topic(f"enriched-{label}", partitions=ORDER_PARTITIONS)
        config = StreamsConfig(
            application_id=app_id,
            bootstrap_servers=kafka.bootstrap_servers,
            state_dir=str(tmp_path / label),
            commit_interval_ms=200,
        )
        clients[label] = KafkaStreams(_topology(orders, customers, outputs[label], table_joined), config)

    misplaced = [c for c in CUSTOMERS if not _placed_alike(c)]
    assert 0 < len(misplaced) < len(CUSTOMERS)  # the default partitioner places some customers elsewhere

    await asyncio.gather(*(client.start() for client in clients.values()))
    try:
        await _produce_by_number(kafka, customers, CUSTOMERS, CUSTOMER_PARTITIONS)
        await _produce_by_number(kafka, orders, ORDERS, ORDER_PARTITIONS)
        custom = _expected(lambda customer: True)
        default = _expected(_placed_alike)
        on_zero = {k: v for k, v in custom.items() if _by_number(k, ORDER_PARTITIONS) == 0}
        assert await _wait_for(kafka, outputs["custom"], custom) == custom
        assert await _wait_for(kafka, outputs["default"], default) == default
        assert await _wait_for(kafka, outputs["responses-to-zero"], on_zero) == on_zero
        await asyncio.sleep(2)  # no late answer reaches an order of another partition
        assert await _wait_for(kafka, outputs["responses-to-zero"], on_zero) == on_zero
    finally:
        await asyncio.gather(*(client.close() for client in clients.values()))
