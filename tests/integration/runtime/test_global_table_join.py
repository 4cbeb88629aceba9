"""A GlobalKTable on the real broker: two clients of one app each hold the whole table, a stream over 3
partitions is joined on both, updates reach both, and a restart restores from the offsets the global store keeps.

The customers topic has 2 partitions and the orders topic 3: a global join needs no co-partitioning. Expected
output is computed here from the records produced: each order joined with its customer's value at the time,
as every update is in both clients' stores before the orders that must see it are produced.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rocksdict import Options, Rdict

from streamlet.config import StreamsConfig
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.state import timestamped
from streamlet.state.checkpoint import OffsetCheckpoint
from streamlet.state.rocksdb_store import read_store_offsets
from streamlet.topology import StreamsBuilder, Topology
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

ORDER_PARTITIONS = 3
CUSTOMER_PARTITIONS = 2


def _topology(orders: str, customers: str, out: str) -> Topology:
    builder = StreamsBuilder()
    table = builder.global_table(customers, "str", "str", store_name="customers")
    orders_stream = builder.stream(orders, "str", "str")  # key: order id, value: customer id
    orders_stream.left_join(table, lambda order, customer: customer, lambda c, name: f"{c}:{name}").to(
        out, "str", "str"
    )
    return builder.build()


def _config(kafka: KafkaTestCluster, app_id: str, state_dir: Path) -> StreamsConfig:
    return StreamsConfig(
        application_id=app_id,
        bootstrap_servers=kafka.bootstrap_servers,
        state_dir=str(state_dir),
        commit_interval_ms=200,
    )


def _table_of(client: KafkaStreams) -> dict[str, str]:
    assert client.global_thread is not None
    store = client.global_thread.stores["customers"]
    return {k.decode(): timestamped.value_of(v).decode() for k, v in store.all()}


async def _produce(kafka: KafkaTestCluster, topic: str, records: list[tuple[str, str | None]]) -> None:
    await kafka.produce(topic, records)


async def _read(kafka: KafkaTestCluster, topic: str, expected: int) -> list[tuple[str, str]]:
    records = await kafka.drain(topic, ORDER_PARTITIONS, expected=expected, timeout=60)
    return sorted((r.key.decode(), r.value.decode()) for r in records)


def _orders(start: int, stop: int) -> list[tuple[str, str]]:
    return [(f"o{i:03d}", f"c{i % 12}") for i in range(start, stop)]  # c10, c11 have no customer


def _enriched(orders: list[tuple[str, str]], table: dict[str, str]) -> list[tuple[str, str]]:
    return [(order, f"{customer}:{table.get(customer)}") for order, customer in orders]


async def test_two_clients_hold_the_whole_global_table_and_join_on_every_partition(
    kafka: KafkaTestCluster, tmp_path: Path
) -> None:
    orders = await kafka.create_topic("orders", partitions=ORDER_PARTITIONS)
    customers = await kafka.create_topic("customers", partitions=CUSTOMER_PARTITIONS)
    out = await kafka.create_topic("enriched", partitions=ORDER_PARTITIONS)
    topology = _topology(orders, customers, out)
    app_id = unique_name("global-enrich")
    table = {f"c{i}": f"customer-{i}" for i in range(10)}
    await _produce(kafka, customers, list(table.items()))

    clients = [KafkaStreams(topology, _config(kafka, app_id, tmp_path / f"client{i}")) for i in range(2)]
    try:
        for client in clients:
            await client.start()  # returns once the global store is restored
            assert _table_of(client) == table
        await wait_until(
            lambda: all(c.threads[0].task_manager.active for c in clients), "both clients to own some of the 3 tasks"
        )
        first = _orders(0, 60)
        await _produce(kafka, orders, first)
        expected = _enriched(first, table)
        assert await _read(kafka, out, len(expected)) == sorted(expected)

        updates: list[tuple[str, str | None]] = [("c1", "moved"), ("c2", None), ("c10", "new")]
        await _produce(kafka, customers, updates)
        table.update({"c1": "moved", "c10": "new"})
        del table["c2"]
        await wait_until(lambda: all(_table_of(c) == table for c in clients), "both clients to see the updates")
        second = _orders(60, 120)
        await _produce(kafka, orders, second)
        expected += _enriched(second, table)
        assert await _read(kafka, out, len(expected)) == sorted(expected)
    finally:
        for client in clients:
            await client.close()


async def test_a_restart_reads_only_after_the_stores_offsets_a_legacy_checkpoint_migrates_a_bad_offset_rereads(
    kafka: KafkaTestCluster, tmp_path: Path
) -> None:
    """KIP-1035 on global stores: each restart restores exactly the records after the offsets the store keeps
    (counted by the global thread), records followed while running included; an older version's `.checkpoint`
    is migrated into the store and removed; an unreadable offset in the store re-reads the whole topic, once."""
    orders = await kafka.create_topic("orders", partitions=ORDER_PARTITIONS)
    customers = await kafka.create_topic("customers", partitions=CUSTOMER_PARTITIONS)
    out = await kafka.create_topic("enriched", partitions=ORDER_PARTITIONS)
    topology = _topology(orders, customers, out)
    config = _config(kafka, unique_name("global-restart"), tmp_path)
    global_dir = tmp_path / config.application_id / "global"
    store_dir = global_dir / "rocksdb" / "customers"
    legacy = OffsetCheckpoint(global_dir / ".checkpoint")
    table = {f"c{i}": f"customer-{i}" for i in range(10)}
    await _produce(kafka, customers, list(table.items()))

    async def restart(expected_restored: int) -> None:
        client = KafkaStreams(topology, config)
        await client.start()
        try:
            assert client.global_thread is not None and client.global_thread.restored_records == expected_restored
            assert _table_of(client) == table
        finally:
            await client.close()

    await restart(len(table))
    assert sum(read_store_offsets(store_dir).values()) == len(table)  # next offsets of both partitions
    assert not legacy.path.exists()

    tail: list[tuple[str, str | None]] = [("c3", "three"), ("c4", None), ("c11", "eleven")]
    await _produce(kafka, customers, tail)
    table.update({"c3": "three", "c11": "eleven"})
    del table["c4"]
    client = KafkaStreams(topology, config)
    await client.start()
    try:
        assert client.global_thread is not None and client.global_thread.restored_records == len(tail)
        assert _table_of(client) == table
        orders_in = _orders(0, 24)
        await _produce(kafka, orders, orders_in)
        expected = _enriched(orders_in, table)
        assert await _read(kafka, out, len(expected)) == sorted(expected)
        followed: list[tuple[str, str | None]] = [("c5", "five"), ("c6", None)]
        await _produce(kafka, customers, followed)  # applied by the running global thread, not by a restore
        table["c5"] = "five"
        del table["c6"]
        await wait_until(lambda: _table_of(client) == table, "the global thread to apply the updates")
    finally:
        await client.close()
    total = 10 + len(tail) + len(followed)
    assert sum(read_store_offsets(store_dir).values()) == total
    await restart(0)

    # a global directory of an older version: the offsets in `.checkpoint`, none in the store
    offsets = read_store_offsets(store_dir)
    db = Rdict(str(store_dir), Options(raw_mode=True))
    for key in list(db.get_column_family("offsets").keys()):
        db.get_column_family("offsets").delete(key)
    db.close()
    assert read_store_offsets(store_dir) == {}
    legacy.write(offsets)
    await restart(0)  # resumed from the migrated offsets: nothing re-read
    assert not legacy.path.exists()
    assert read_store_offsets(store_dir) == offsets

    db = Rdict(str(store_dir), Options(raw_mode=True))
    db.get_column_family("offsets").put(f"{customers}-0".encode(), b"\x01")  # not an 8-byte long
    db.close()
    await restart(total)  # the store was wiped: the whole topic, again
    assert read_store_offsets(store_dir) == offsets
    await restart(0)
