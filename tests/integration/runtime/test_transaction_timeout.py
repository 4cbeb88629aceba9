"""exactly_once_v2 on the real broker: a transaction that outlives `transaction_timeout_ms` (here a processor
that blocks the worker) is aborted by the transaction coordinator. The thread's next send or commit is
refused; it takes the migrated path, rejoins, and its task redoes the input from the last committed offsets,
so a read_committed reader sees every record's output exactly once."""

from __future__ import annotations

import logging
import time

import pytest

from streamlet.config import StreamsConfig
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.topology import StreamsBuilder
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.waiting import poll_until

pytestmark = pytest.mark.integration

#: The coordinator looks for timed-out transactions every 10 s (Kafka's default): block past both.
TRANSACTION_TIMEOUT_MS = 2_000
BLOCK_S = 14


async def test_a_transaction_past_its_timeout_is_aborted_and_its_input_redone(
    kafka: KafkaTestCluster, tmp_path, caplog: pytest.LogCaptureFixture
) -> None:
    source = await kafka.create_topic("txn-timeout-in", partitions=1)
    sink = await kafka.create_topic("txn-timeout-out", partitions=1)
    blocked: list[str] = []

    def slow_once(value: str) -> str:
        if value == "blocker" and not blocked:
            blocked.append(value)
            time.sleep(BLOCK_S)  # a stuck processor: the open transaction times out meanwhile
        return value

    builder = StreamsBuilder()
    (
        builder.stream(source, key_serde="str", value_serde="str")
        .map_values(slow_once)
        .to(sink, key_serde="str", value_serde="str")
    )
    client = KafkaStreams(
        builder.build(),
        StreamsConfig(
            application_id=unique_name("txn-timeout"),
            bootstrap_servers=kafka.bootstrap_servers,
            state_dir=str(tmp_path),
            processing_guarantee="exactly_once_v2",
            transaction_timeout_ms=TRANSACTION_TIMEOUT_MS,
            commit_interval_ms=5_000,  # the first records' transaction is still open when the blocker comes
        ),
    )
    caplog.set_level(logging.WARNING, logger="streamlet")
    await client.start()
    try:
        await kafka.produce(source, [(b"k", f"before-{i}".encode()) for i in range(5)])
        await kafka.drain(
            sink, 1, expected=5, timeout=60
        )  # processed and sent (read uncommitted): the transaction is open
        await kafka.produce(source, [(b"k", b"blocker")] + [(b"k", f"after-{i}".encode()) for i in range(5)])
        expected = [f"before-{i}" for i in range(5)] + ["blocker"] + [f"after-{i}" for i in range(5)]

        async def committed() -> list[str]:
            return [r.value.decode() for r in await kafka.drain(sink, 1, read_committed=True)]

        values = await poll_until(committed, lambda found: len(found) >= len(expected), timeout=90, interval=1)
        assert values == expected
        assert blocked == ["blocker"]
        assert any("without committing" in r.getMessage() for r in caplog.records), "no migrated path taken"
        assert all(not t.done.done() for t in client.threads if t.done is not None)  # the thread lives on
    finally:
        await client.close()
