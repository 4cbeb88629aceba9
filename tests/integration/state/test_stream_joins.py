"""A windowed left join of two streams on the real broker, across a restart on an empty state directory: the
join's window stores and its shared store of unmatched records come back from their changelogs only.

The expected output is computed in the test from the input records alone (pairs within the window, orders
without a payment once their window closed), not by streamlet.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path

import pytest
from aiokafka.structs import TopicPartition

from streamlet.config import StreamsConfig
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.topology import StreamsBuilder, Topology
from streamlet.topology.join_windows import JoinWindows, StreamJoined
from tests.support.kafka import KafkaTestCluster, Record, unique_name

pytestmark = pytest.mark.integration

PARTITIONS = 2
WINDOW_MS = 60_000
STORE = "paid"
#: the join's stores (named after StreamJoined's store name) and so its changelogs
STORES = (f"{STORE}-this-join-store", f"{STORE}-outer-other-join-store", f"{STORE}-left-shared-join-store")
Event = tuple[str, str, int]  # key, value, timestamp


def _topology(orders: str, payments: str, sink: str) -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream(orders, key_serde="str", value_serde="str")
        .left_join(
            builder.stream(payments, key_serde="str", value_serde="str"),
            lambda order, payment: f"{order}|{payment}",
            JoinWindows.of_time_difference_with_no_grace(WINDOW_MS),
            stream_joined=StreamJoined.as_(STORE),
        )
        .to(sink, key_serde="str", value_serde="str")
    )
    return builder.build()


def _expected(orders: list[Event], payments: list[Event]) -> Counter[tuple[str, str]]:
    """The left join by its definition: each order with each payment of its key at most WINDOW_MS apart, and an
    order with none as `order|None` (all its possible payments arrived before the windows were closed)."""
    result: Counter[tuple[str, str]] = Counter()
    for key, order, at in orders:
        partners = [payment for k, payment, paid_at in payments if k == key and abs(paid_at - at) <= WINDOW_MS]
        for payment in partners:
            result[(key, f"{order}|{payment}")] += 1
        if not partners:
            result[(key, f"{order}|None")] += 1
    return result


def _config(kafka: KafkaTestCluster, app_id: str, state_dir: Path) -> StreamsConfig:
    return StreamsConfig(
        application_id=app_id,
        bootstrap_servers=kafka.bootstrap_servers,
        state_dir=str(state_dir),
        num_stream_threads=1,
        commit_interval_ms=300,
    )  # type: ignore[arg-type]


async def _produce(kafka: KafkaTestCluster, topic: str, events: list[Event], partition: int | None = None) -> None:
    await kafka.produce(topic, [Record(key, value, timestamp, partition) for key, value, timestamp in events])


async def _output(kafka: KafkaTestCluster, sink: str) -> Counter[tuple[str, str]]:
    records = await kafka.drain(sink, PARTITIONS)
    return Counter((record.key.decode(), record.value.decode()) for record in records)


class _RestoreCounter:
    def __init__(self) -> None:
        self.restored: dict[str, int] = {}

    def on_restore_start(self, tp: TopicPartition, store: str, start: int, end: int) -> None:
        pass

    def on_batch_restored(self, tp: TopicPartition, store: str, batch_end: int, count: int) -> None:
        pass

    def on_restore_end(self, tp: TopicPartition, store: str, total: int) -> None:
        self.restored[store] = self.restored.get(store, 0) + total


async def test_left_join_restored_from_its_changelogs_joins_and_closes_windows_after_a_restart(
    kafka: KafkaTestCluster, tmp_path: Path
) -> None:
    orders_topic = await kafka.create_topic("orders", partitions=PARTITIONS)
    payments_topic = await kafka.create_topic("payments", partitions=PARTITIONS)
    sink = await kafka.create_topic("paid-orders", partitions=PARTITIONS)
    app_id = unique_name("stream-join")
    for store in STORES:
        kafka.track(f"{app_id}-{store}-changelog")
    topology = _topology(orders_topic, payments_topic, sink)
    base = int(time.time() * 1000) // 1000 * 1000 - 900_000  # recent: within the topics' time retention

    orders = [(f"c{i}", f"o{i}", base + i * 1_000) for i in range(1, 9)]
    before_restart = [("c1", "p1", base + 30_000), ("c2", "p2", base - 40_000)]
    # after the restart: payments of orders placed before it (in the restored store), one too late for c5's
    # window, a second one for c1, and one for an order that never came (a left join drops it)
    after_restart = [
        ("c3", "p3", base + 50_000),
        ("c4", "p4", base + 4_000),
        ("c5", "p5", base + 5_000 + WINDOW_MS + 1),
        ("c1", "p1b", base),
        ("c9", "p9", base + 9_000),
    ]

    client = KafkaStreams(topology, _config(kafka, app_id, tmp_path / "first"))
    await client.start()
    try:
        await _produce(kafka, orders_topic, orders)
        await _produce(kafka, payments_topic, before_restart)
        first = _expected(orders, before_restart)
        first = Counter({pair: n for pair, n in first.items() if not pair[1].endswith("|None")})  # windows open
        deadline = asyncio.get_running_loop().time() + 60
        while await _output(kafka, sink) != first and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.5)
        assert await _output(kafka, sink) == first
    finally:
        await client.close()

    # an empty state directory: the orders (and which of them still wait for a payment) exist only in the
    # changelogs now
    restores = _RestoreCounter()
    client = KafkaStreams(topology, _config(kafka, app_id, tmp_path / "second"), restore_listener=restores)
    await client.start()
    try:
        await _produce(kafka, payments_topic, after_restart)
        expected = _expected(orders, before_restart + after_restart)
        # records far ahead close every window, on both partitions; unmatched orders are emitted by the next
        # scan (at most one per wall-clock second), so keep time moving until they all are
        deadline = asyncio.get_running_loop().time() + 90
        tick = 0
        while (got := await _output(kafka, sink)) != expected and asyncio.get_running_loop().time() < deadline:
            tick += 1
            for partition in range(PARTITIONS):
                closer = (f"closer{partition}", "x", base + 10 * WINDOW_MS + tick)
                await _produce(kafka, payments_topic, [closer], partition=partition)
            await asyncio.sleep(0.5)
        assert got == expected
        assert expected[("c5", "o5|None")] == 1 and expected[("c1", "o1|p1b")] == 1  # the edges are in it
        assert set(restores.restored) == set(STORES), restores.restored
        assert restores.restored[f"{STORE}-this-join-store"] >= len(orders)
    finally:
        await client.close()
