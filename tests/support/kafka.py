"""Helpers for integration tests: unique topics, producing and draining records on the real broker."""

from __future__ import annotations

import asyncio
import itertools
import os
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from aiokafka.admin import NewTopic
from aiokafka.structs import ConsumerRecord, TopicPartition

from streamlet.kafka import connect
from streamlet.kafka.security import PLAINTEXT, ClientSecurity

_counter = itertools.count()


def unique_name(prefix: str) -> str:
    return f"{prefix}-{os.getpid()}-{next(_counter)}-{uuid.uuid4().hex[:6]}"


@dataclass(frozen=True)
class Record:
    """A record to produce. Keys and values as bytes, str (sent as UTF-8) or None; no partition: the producer's
    partitioner picks one from the key; no timestamp: the producer's clock."""

    key: bytes | str | None
    value: bytes | str | None
    timestamp_ms: int | None = None
    partition: int | None = None
    headers: tuple[tuple[str, bytes], ...] = ()


def _bytes(data: bytes | str | None) -> bytes | None:
    return data.encode() if isinstance(data, str) else data


def _isolation(read_committed: bool) -> str:
    return "read_committed" if read_committed else "read_uncommitted"


class KafkaTestCluster:
    """A thin test-side handle on the broker; tracks created topics so each test cleans up after itself."""

    def __init__(self, bootstrap_servers: str, security: ClientSecurity = PLAINTEXT) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.cluster = connect.Cluster(bootstrap_servers, security)  # a secured broker's tests pass its settings
        self.admin = connect.admin(self.cluster)
        self._created: list[str] = []

    async def start(self) -> None:
        await self.admin.start()

    async def close(self) -> None:
        existing = set(await self.admin.list_topics())
        doomed = [t for t in self._created if t in existing]
        if doomed:
            await self.admin.delete_topics(doomed)
        await self.admin.close()

    async def create_topic(
        self,
        prefix: str = "topic",
        partitions: int = 1,
        *,
        name: str | None = None,
        config: dict[str, str] | None = None,
        replication_factor: int = 1,
    ) -> str:
        """`replication_factor` -1: the broker's default.replication.factor (a replicated cluster's)."""
        topic = name or unique_name(prefix)
        assignments: dict[int, list[int]] | None = {} if replication_factor == -1 else None
        new = NewTopic(
            topic, partitions, replication_factor, replica_assignments=assignments, topic_configs=config or {}
        )
        await self.admin.create_topics([new])
        self._created.append(topic)
        await self.wait_for_metadata(topic, partitions)
        return topic

    def track(self, topic: str) -> None:
        """Delete `topic` (created by the code under test) when the test ends."""
        self._created.append(topic)

    async def wait_for_metadata(self, topic: str, partitions: int, timeout: float = 15.0) -> None:
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            described = await self.admin.describe_topics([topic])
            found = described[0].get("partitions", []) if described else []
            if len(found) == partitions and all(p.get("leader", -1) >= 0 for p in found):
                return
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"topic {topic} has no leader for all {partitions} partitions")
            await asyncio.sleep(0.1)

    async def produce(
        self,
        topic: str,
        records: Iterable[Record | tuple[bytes | str | None, bytes | str | None]],
        *,
        partition: int | None = None,
    ) -> None:
        """Send `records` in order (a partition keeps their order) and return once the broker acknowledged all.

        `(key, value)` pairs go to `partition` (None: the key's partition); a `Record` says its own."""
        producer = connect.producer(self.cluster, linger_ms=5)
        await producer.start()
        try:
            futures = []
            for item in records:
                record = item if isinstance(item, Record) else Record(*item, partition=partition)
                futures.append(
                    await producer.send(
                        topic,
                        value=_bytes(record.value),
                        key=_bytes(record.key),
                        partition=record.partition,
                        timestamp_ms=record.timestamp_ms,
                        headers=list(record.headers) or None,
                    )
                )
            await producer.flush()
            for future in futures:
                await future
        finally:
            await producer.stop()

    async def end_offsets(self, topic: str, partitions: int, *, read_committed: bool = False) -> dict[int, int]:
        """The partitions' end offsets; `read_committed`: their last stable offsets (none of an open transaction)."""
        consumer = connect.consumer(self.cluster, isolation_level=_isolation(read_committed))
        await consumer.start()
        try:
            tps = [TopicPartition(topic, p) for p in range(partitions)]
            ends = await consumer.end_offsets(tps)
            return {tp.partition: offset for tp, offset in ends.items()}
        finally:
            await consumer.stop()

    async def drain(
        self,
        topic: str,
        partitions: int,
        *,
        timeout: float = 30.0,
        expected: int | None = None,
        read_committed: bool = False,
    ) -> list[ConsumerRecord]:
        """All records currently in `topic` (up to its end offsets, or `expected` many), in partition order.

        `read_committed`: only records of committed transactions, up to the last stable offset.
        """
        consumer = connect.consumer(
            self.cluster,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            isolation_level=_isolation(read_committed),
        )
        await consumer.start()
        try:
            tps = [TopicPartition(topic, p) for p in range(partitions)]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            ends = await consumer.end_offsets(tps)
            records: list[ConsumerRecord] = []
            deadline = asyncio.get_running_loop().time() + timeout
            while True:
                done_by_offsets = all([await consumer.position(tp) >= ends[tp] for tp in tps])
                if (expected is None and done_by_offsets) or (expected is not None and len(records) >= expected):
                    break
                if asyncio.get_running_loop().time() > deadline:
                    raise TimeoutError(f"drained {len(records)} records of {topic} before the timeout")
                batch = await consumer.getmany(timeout_ms=200)
                for tp_records in batch.values():
                    records.extend(tp_records)
            records.sort(key=lambda r: (r.partition, r.offset))
            return records
        finally:
            await consumer.stop()


def by_partition(records: Sequence[ConsumerRecord]) -> dict[int, list[ConsumerRecord]]:
    out: dict[int, list[ConsumerRecord]] = {}
    for record in records:
        out.setdefault(record.partition, []).append(record)
    return out
