"""examples/enrichment/pipeline.py as two worker processes on the real broker, through a rolling restart while
orders and payments keep flowing: every order is enriched with its customer, every order paid within its
5-minute window is joined with its payment, and every other order is emitted once as unpaid after its window
closed. Exactly once each under exactly_once_v2; under at_least_once none is lost (duplicates are counted).

The expected records are computed here from the generated input. Customers are loaded (their changelog holds
them all) before any order is sent: a stream-table join reads the table as it is when the order is processed.
Orders and payments are sent in event-time order, event time running `SPEEDUP` times faster than the wall
clock, so windows close during the run; payments come at most a minute after their order, well inside the
window, so a worker lagging a few seconds behind the other input still joins them as the input's times say.
"""

from __future__ import annotations

import asyncio
import collections
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer

from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.workers import Workers

pytestmark = pytest.mark.e2e

SECOND, MINUTE = 1_000, 60_000
PARTITIONS = 4
CUSTOMERS = 200
ORDERS = 1_000
SPEEDUP = 8  # event-time ms per wall-clock ms: 1,000 orders 400 ms apart are sent in 50 s
ORDER_GAP_MS = 400
WINDOW_MS = 5 * MINUTE
GUARANTEES = {
    "exactly_once_v2": {"commit_interval_ms": "200", "transaction_timeout_ms": "5000"},
    "at_least_once": {"commit_interval_ms": "500"},
}
Out = tuple[str, str, int]  # key, value, timestamp


@dataclass
class Input:
    """The generated input and, computed from it alone, the records each output topic must end with."""

    customers: dict[str, str]
    events: list[tuple[int, str, str, str]] = field(default_factory=list)  # (timestamp, topic kind, key, value)
    enriched: set[Out] = field(default_factory=set)
    unknown: set[Out] = field(default_factory=set)
    paid: set[Out] = field(default_factory=set)
    unpaid: set[Out] = field(default_factory=set)


def generate(base: int, seed: int = 12) -> Input:
    """Orders of known customers (95 %) and unknown ones; 60 % paid 1-60 s later, 10 % paid too late (just
    after the 5-minute window, inside the grace period), the rest never paid. No payment comes after the last
    order (those orders go unpaid): the input ends with the orders."""
    rng = random.Random(seed)
    data = Input({f"c{i}": f"customer-{i}" for i in range(CUSTOMERS)})
    end = base + (ORDERS - 1) * ORDER_GAP_MS
    for i in range(ORDERS):
        at, order = base + i * ORDER_GAP_MS, f"o{i} item-{rng.randrange(100)}"
        known = rng.random() < 0.95
        customer = f"c{rng.randrange(CUSTOMERS)}" if known else f"x{i}"
        data.events.append((at, "orders", customer, order))
        enriched = f"{order} for {data.customers[customer]}" if known else f"{order} for an unknown customer"
        (data.enriched if known else data.unknown).add((customer, enriched, at))
        draw, amount = rng.random(), f"{rng.randrange(1, 500)}.00"
        paid_at = at + (rng.randrange(SECOND, MINUTE) if draw < 0.6 else rng.randrange(1, 20) * SECOND + WINDOW_MS)
        if draw < 0.7 and paid_at <= end:
            data.events.append((paid_at, "payments", f"o{i}", amount))
        if known and draw < 0.6 and paid_at <= end:
            data.paid.add((f"o{i}", f"{enriched} paid {amount}", paid_at))
        elif known:
            data.unpaid.add((f"o{i}", f"{enriched} unpaid", at))
    data.events.sort(key=lambda event: event[0])
    return data


async def produce_paced(bootstrap: str, topics: dict[str, str], events: list[tuple[int, str, str, str]]) -> None:
    """Sends `events` as their event time passes, `SPEEDUP` times faster than the wall clock."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    try:
        loop = asyncio.get_running_loop()
        start, base = loop.time(), events[0][0]
        for at, kind, key, value in events:
            delay = start + (at - base) / SPEEDUP / 1000 - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            await producer.send(topics[kind], value.encode(), key=key.encode(), timestamp_ms=at)
        await producer.flush()
    finally:
        await producer.stop()


async def topic_records(kafka: KafkaTestCluster, topic: str, read_committed: bool) -> collections.Counter[Out]:
    records = await kafka.drain(topic, PARTITIONS, read_committed=read_committed)
    return collections.Counter((r.key.decode(), r.value.decode(), r.timestamp) for r in records)


async def wait_for_records(kafka: KafkaTestCluster, topic: str, at_least: int, timeout: float) -> None:
    """Until `topic` (created by the workers) holds `at_least` committed records."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        if topic in await kafka.admin.list_topics():
            if sum((await topic_records(kafka, topic, read_committed=True)).values()) >= at_least:
                return
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"{topic} did not reach {at_least} records within {timeout} s")
        await asyncio.sleep(0.5)


async def close_windows(kafka: KafkaTestCluster, payments: str, at: int) -> None:
    """A payment of no order on every partition, long after all orders: every join task's stream time passes
    every window, so the join emits the unpaid orders still waiting (at its next scan, at most once a second)."""
    producer = AIOKafkaProducer(bootstrap_servers=kafka.bootstrap_servers)
    await producer.start()
    try:
        for partition in range(PARTITIONS):
            await producer.send(
                payments, b"0.00", key=f"tick-{partition}".encode(), partition=partition, timestamp_ms=at
            )
        await producer.flush()
    finally:
        await producer.stop()


@pytest.mark.parametrize("guarantee", list(GUARANTEES))
async def test_orders_are_enriched_and_settled_through_a_rolling_restart(
    kafka: KafkaTestCluster, tmp_path: Path, guarantee: str
) -> None:
    eos = guarantee == "exactly_once_v2"
    topics = {
        kind: await kafka.create_topic(kind, partitions=PARTITIONS)
        for kind in ("customers", "orders", "payments", "enriched", "unknown", "paid", "unpaid")
    }
    app_id = unique_name("enrichment-pipeline")
    env = {
        "ENRICHMENT_APPLICATION_ID": app_id,
        "ENRICHMENT_CUSTOMERS_TOPIC": topics["customers"],
        "ENRICHMENT_ORDERS_TOPIC": topics["orders"],
        "ENRICHMENT_PAYMENTS_TOPIC": topics["payments"],
        "ENRICHMENT_OUTPUT_TOPIC": topics["enriched"],
        "ENRICHMENT_UNKNOWN_TOPIC": topics["unknown"],
        "ENRICHMENT_PAID_TOPIC": topics["paid"],
        "ENRICHMENT_UNPAID_TOPIC": topics["unpaid"],
    }
    config = {"processing_guarantee": guarantee, "session_timeout_ms": "6000", **GUARANTEES[guarantee]}
    workers = Workers(
        kafka.bootstrap_servers, topics["orders"], topics["enriched"], app_id, tmp_path, config,
        "examples.enrichment.pipeline:app", env,
    )  # fmt: skip
    base = (int(time.time() * 1000) // MINUTE - 60) * MINUTE  # an hour ago: inside the topics' retention
    data = generate(base)
    expected = {"enriched": data.enriched, "unknown": data.unknown, "paid": data.paid, "unpaid": data.unpaid}
    producing: asyncio.Task[None] | None = None
    try:
        customers = [(key.encode(), name.encode()) for key, name in data.customers.items()]
        await kafka.produce(topics["customers"], customers)
        workers.start(0, threads=1)
        workers.start(1, threads=1)
        await wait_for_records(kafka, f"{app_id}-customers-changelog", CUSTOMERS, timeout=60)

        producing = asyncio.create_task(produce_paced(kafka.bootstrap_servers, topics, data.events))
        await asyncio.sleep(8)
        for index in (0, 1):  # the rolling restart, while orders and payments keep coming
            before = workers.assignments(index)
            # a clean stop (SIGTERM: commit, close, leave the group), waited for off the loop: the input keeps flowing
            assert await asyncio.to_thread(workers.stop, index) == 0, workers.log(index)[-3000:]
            workers.start(index, threads=1)
            await workers.wait_assigned(index, more_than=before)
        assert not producing.done(), "the rolling restart outlasted the input: it did not happen mid-stream"
        await producing

        deadline = asyncio.get_running_loop().time() + 60
        while asyncio.get_running_loop().time() < deadline:
            await close_windows(kafka, topics["payments"], data.events[-1][0] + 2 * WINDOW_MS)
            got = {kind: await topic_records(kafka, topics[kind], eos) for kind in expected}
            if all(got[kind].keys() >= expected[kind] for kind in expected):
                break
            await asyncio.sleep(1.5)
        codes = workers.stop_all()
        assert codes == {0: 0, 1: 0}, (workers.log(0)[-3000:], workers.log(1)[-3000:])
        got = {kind: await topic_records(kafka, topics[kind], eos) for kind in expected}  # after the last commit
    finally:
        if producing is not None and not producing.done():
            producing.cancel()
            await asyncio.gather(producing, return_exceptions=True)
        workers.stop_all()
        for topic in await kafka.admin.list_topics():
            if topic.startswith(app_id):
                kafka.track(topic)

    for kind, records in expected.items():
        missing, wrong = records - got[kind].keys(), got[kind].keys() - records
        assert not missing and not wrong, (
            f"{kind}: {len(missing)} missing {sorted(missing)[:5]}, wrong {sorted(wrong)[:5]}"
        )
    duplicates = {kind: sum(got[kind].values()) - len(got[kind]) for kind in expected}
    print(f"{guarantee}: {dict((kind, len(records)) for kind, records in expected.items())}, duplicates {duplicates}")
    if eos:
        assert duplicates == dict.fromkeys(expected, 0)
