"""Kafka clients of a stream thread, from one injectable supplier (Kafka Streams' KafkaClientSupplier).

The runtime only talks to the small protocols below, so unit tests drive a stream thread, its task
manager and its changelog reader with in-memory fakes (as Kafka Streams' own tests use MockConsumer),
and the default supplier builds aiokafka clients with the settings a stream thread needs.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from typing import Protocol

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import OffsetAndMetadata, TopicPartition

from streamlet.config import StreamsConfig
from streamlet.kafka import connect, coordinator_lookup, txn_offset_commit
from streamlet.kafka.group.consumer import GroupConsumer
from streamlet.kafka.group.consumer_protocol import RebalanceProtocol
from streamlet.kafka.group.membership import GroupAssignor, MembershipConfig, RebalanceListener
from streamlet.kafka.record_blocks import BlockRestoreConsumer
from streamlet.kafka.txn_offset_commit import GroupMetadata
from streamlet.runtime.fetched_records import RAW_RECORDS, FetchedRecord

log = logging.getLogger("streamlet.thread")


class RestoreConsumer(Protocol):
    """A consumer outside the group, assigned changelog partitions by hand."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def assign(self, partitions: Collection[TopicPartition]) -> None: ...

    def seek(self, partition: TopicPartition, offset: int) -> None: ...

    async def position(self, partition: TopicPartition) -> int: ...

    async def end_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]: ...

    async def getmany(
        self, *partitions: TopicPartition, timeout_ms: int = 0, max_records: int | None = None
    ) -> Mapping[TopicPartition, Sequence[FetchedRecord]]: ...


class MainConsumer(RestoreConsumer, Protocol):
    """The group member of a stream thread."""

    def subscribe(self, topics: Collection[str], listener: RebalanceListener, assignor: GroupAssignor) -> None:
        """Join the group (after `start()`): rebalances call `listener`; the leader's `assignor` places tasks."""
        ...

    def assignment(self) -> set[TopicPartition]: ...

    def pause(self, *partitions: TopicPartition) -> None: ...

    def resume(self, *partitions: TopicPartition) -> None: ...

    async def commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None: ...

    async def committed_offsets(
        self, partitions: Collection[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """The group's committed offsets of `partitions`, with their metadata (partitions never committed: absent)."""
        ...

    def drop_partitions_and_rejoin(self) -> None:
        """Give up every partition without callbacks (its tasks were closed dirty: the positions are past what
        was committed) and rejoin, so whoever gets them next starts from the committed offsets."""
        ...

    def request_rejoin(self) -> None:
        """Rejoin the group on the next poll (a probing rebalance)."""
        ...

    def generation_lost(self) -> bool:
        """True once the coordinator has dropped this member (its partitions now belong to others)."""
        ...

    def group_metadata(self) -> GroupMetadata:
        """Generation, member id and instance id: what a transactional offset commit is fenced by."""
        ...

    async def leave_group(self) -> None:
        """Leave the group now, even as a static member (which otherwise keeps its place when it stops)."""
        ...

    def lag(self, partition: TopicPartition) -> int | None:
        """Records between the position and the end of the last fetch, the high watermark (read_committed: the
        last stable offset), without a request; None if unknown (Kafka's `Consumer#currentLag`)."""
        ...


class KafkaClientSupplier(Protocol):
    """Builds the clients of one stream thread."""

    def main_consumer(
        self, config: StreamsConfig, client_id: str, group_instance_id: str | None = None
    ) -> MainConsumer: ...

    def restore_consumer(self, config: StreamsConfig, client_id: str) -> RestoreConsumer: ...

    def admin_consumer(self, config: StreamsConfig, client_id: str) -> RestoreConsumer:
        """What Kafka Streams' admin client does for the runtime: list log-end offsets (never fetch records)."""
        ...

    def producer(
        self, config: StreamsConfig, client_id: str, transactional_id: str | None = None
    ) -> AIOKafkaProducer: ...


class AioKafkaClientSupplier:
    """The default supplier: aiokafka clients configured as Kafka Streams configures its own."""

    def main_consumer(
        self, config: StreamsConfig, client_id: str, group_instance_id: str | None = None
    ) -> GroupConsumer:
        return connect.build(
            GroupConsumer,
            config.cluster,
            membership=MembershipConfig(
                group_id=config.application_id,
                group_instance_id=group_instance_id,
                session_timeout_ms=config.session_timeout_ms,
                rebalance_timeout_ms=config.rebalance_timeout_ms,
                heartbeat_interval_ms=config.heartbeat_interval_ms,
                max_poll_interval_ms=config.max_poll_interval_ms,
                protocol=RebalanceProtocol(config.rebalance_protocol),
                require_stable_offsets=config.exactly_once,
                client_id=client_id,
                client_rack=config.client_rack,
            ),
            client_id=client_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_poll_records=config.max_poll_records,
            # a JoinGroup may wait the whole rebalance timeout for the group (Kafka: rebalance timeout + 5 s)
            request_timeout_ms=max(40_000, config.rebalance_timeout_ms + 5_000),
            metadata_max_age_ms=30_000,
            isolation_level=_isolation(config),
            key_deserializer=RAW_RECORDS,  # decoded batch records, no per-record ConsumerRecord
        )

    def restore_consumer(self, config: StreamsConfig, client_id: str) -> AIOKafkaConsumer:
        return connect.build(  # record batches decoded into columns (streamlet.kafka.record_blocks)
            BlockRestoreConsumer,
            config.cluster,
            group_id=None,
            client_id=client_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            isolation_level=_isolation(config),
            # aiokafka's default 1 MiB: with 4 MiB, aiokafka 0.14 was seen returning no records for a large
            # freshly written changelog while moving the position to the end (bench/README.md)
        )

    def admin_consumer(self, config: StreamsConfig, client_id: str) -> AIOKafkaConsumer:
        """Lists log-end offsets as Kafka Streams' admin client does: read_uncommitted, i.e. the high watermark.

        Under exactly-once the last stable offset would stop short of committed records that sit behind a
        transaction still open (a crashed producer's, until it times out): a restore that ended there would
        miss updates whose input offsets are already committed (KAFKA-10167).
        """
        return connect.consumer(
            config.cluster,
            group_id=None,
            client_id=client_id,
            enable_auto_commit=False,
            isolation_level="read_uncommitted",
        )

    def producer(self, config: StreamsConfig, client_id: str, transactional_id: str | None = None) -> AIOKafkaProducer:
        if transactional_id is not None:
            txn_offset_commit.install()  # TxnOffsetCommit v3: zombies cannot commit (KIP-447)
            coordinator_lookup.install()  # a lookup cut by a failover is retried, not the end of the sender
        return connect.producer(
            config.cluster,
            client_id=client_id,
            acks="all",
            linger_ms=5,
            max_batch_size=256 * 1024,
            transactional_id=transactional_id,
            transaction_timeout_ms=config.transaction_timeout_ms,
        )


def _isolation(config: StreamsConfig) -> str:
    """Under exactly-once every consumer, restore and standby ones included, skips aborted transactions."""
    return "read_committed" if config.exactly_once else "read_uncommitted"
