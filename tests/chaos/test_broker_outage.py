"""The broker stops for 20 s and restarts on the same data dir: the workers survive, log the outage at a
bounded rate, and count exactly. Under exactly-once the broker stops mid-transaction, under load. The tests
have a broker of their own, since they stop it."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from streamlet.kafka.broker import LocalBroker
from tests.chaos._report import report
from tests.support.broker import own_broker as broker_of_its_own
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.wordcount import (
    SEED_LINE,
    broken_count_sequences,
    expected_counts,
    real_text_lines,
    wait_for_counts,
)
from tests.support.workers import Workers, produce_steadily

pytestmark = pytest.mark.chaos
OUTAGE_S = 20


@pytest.fixture
def own_broker(tmp_path: Path) -> Iterator[LocalBroker]:
    with broker_of_its_own(tmp_path / "broker") as broker:
        yield broker


@pytest.fixture
async def own_kafka(own_broker: LocalBroker) -> AsyncIterator[KafkaTestCluster]:
    cluster = KafkaTestCluster(own_broker.bootstrap_servers)
    await cluster.start()
    yield cluster


async def outage(broker: LocalBroker, kafka: KafkaTestCluster) -> tuple[KafkaTestCluster, float]:
    """Stop the broker for OUTAGE_S and start it again on its data; a new test cluster client, and the outage's
    length. The test's own clients close first: they would log the outage too."""
    await kafka.admin.close()
    broker.stop()
    down = time.monotonic()
    await asyncio.sleep(OUTAGE_S)
    broker.start()
    recovered = time.monotonic() - down
    after = KafkaTestCluster(broker.bootstrap_servers)
    await after.start()
    return after, recovered


async def test_workers_survive_a_broker_outage_and_count_exactly(
    own_broker: LocalBroker, own_kafka: KafkaTestCluster, tmp_path: Path
) -> None:
    source = await own_kafka.create_topic("chaos-input", partitions=6)
    sink = await own_kafka.create_topic("chaos-output", partitions=6)
    workers = Workers(own_broker.bootstrap_servers, source, sink, unique_name("chaos-outage"), tmp_path)
    lines = real_text_lines() + [SEED_LINE]
    first, second = lines[: len(lines) // 2], lines[len(lines) // 2 :]
    try:
        workers.start(0)
        workers.start(1)
        # a rebalance still under way when the broker goes would replay input (at-least-once): start steady
        await workers.wait_assigned(0, more_than=0)
        await workers.wait_assigned(1, more_than=0)
        await asyncio.sleep(3)
        await produce_steadily(own_kafka, source, first, per_second=1000)
        assert await wait_for_counts(own_kafka, sink, expected_counts(first), timeout=120) == expected_counts(first)
        await asyncio.sleep(2)  # past the commit interval: the outage starts with everything committed
        after, recovered = await outage(own_broker, own_kafka)
        assert workers.alive(0) and workers.alive(1)
        await produce_steadily(after, source, second, per_second=1000)
        input_done = time.monotonic()
        truth = expected_counts(lines)
        final = await wait_for_counts(after, sink, truth, timeout=180)
        await after.admin.close()
        assert final == truth
        report(
            "broker outage",
            final,
            truth,
            since=input_done,
            outage_s=round(recovered, 1),
        )
        for index in (0, 1):
            errors = [line for line in workers.log(index).splitlines() if " ERROR " in line]
            assert len(errors) <= 60, f"{len(errors)} ERROR lines: {errors[:5]}"
        assert workers.stop_all() == {0: 0, 1: 0}
    finally:
        workers.stop_all()


async def test_a_broker_restart_mid_transaction_under_exactly_once_counts_exactly(
    own_broker: LocalBroker, own_kafka: KafkaTestCluster, tmp_path: Path
) -> None:
    """No quiet point: the broker goes while the workers are processing (a transaction commits every 100 ms,
    so one is open). Whatever was open aborts; nothing is lost and nothing counts twice."""
    source = await own_kafka.create_topic("chaos-input", partitions=6)
    sink = await own_kafka.create_topic("chaos-output", partitions=6)
    config = {"processing_guarantee": "exactly_once_v2", "statestore_cache_max_bytes": "0"}
    workers = Workers(own_broker.bootstrap_servers, source, sink, unique_name("chaos-eos-outage"), tmp_path, config)
    lines = (real_text_lines() + [SEED_LINE]) * 2
    first, second = lines[: len(lines) // 2], lines[len(lines) // 2 :]
    try:
        workers.start(0)
        workers.start(1)
        await workers.wait_assigned(0, more_than=0)
        await workers.wait_assigned(1, more_than=0)
        await produce_steadily(own_kafka, source, first, per_second=2000)
        after, recovered = await outage(own_broker, own_kafka)  # right after the last input: still counting it
        assert workers.alive(0) and workers.alive(1)
        await produce_steadily(after, source, second, per_second=1000)
        input_done = time.monotonic()
        truth = expected_counts(lines)
        final = await wait_for_counts(after, sink, truth, timeout=180, read_committed=True)
        broken = broken_count_sequences(await after.drain(sink, 6, read_committed=True), truth)
        await after.admin.close()
        assert final == truth
        assert not broken, f"{len(broken)} words' counts are not 1..N: {list(broken.items())[:3]}"
        report("exactly-once broker outage", final, truth, since=input_done, outage_s=round(recovered, 1))
        assert workers.stop_all() == {0: 0, 1: 0}
    finally:
        workers.stop_all()
