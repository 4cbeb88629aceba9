"""Kafka clients of a stream thread, from one injectable supplier (Kafka Streams' KafkaClientSupplier).

The runtime only talks to the small protocols below, so unit tests drive a stream thread, its task
manager and its changelog reader with in-memory fakes (as Kafka Streams' own tests use MockConsumer),
and the default supplier builds aiokafka clients with the settings a stream thread needs.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Protocol

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener
from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from aiokafka.structs import ConsumerRecord, OffsetAndMetadata, TopicPartition

from streamlet.config import StreamsConfig
from streamlet.runtime import txn_offset_commit
from streamlet.runtime.txn_offset_commit import GroupMetadata

#: aiokafka's generation id of a member that has none (it was fenced, or never joined).
NO_GENERATION = -1


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
    ) -> dict[TopicPartition, list[ConsumerRecord[Any, Any]]]: ...


class MainConsumer(RestoreConsumer, Protocol):
    """The group member of a stream thread."""

    def subscribe(self, topics: Collection[str], listener: ConsumerRebalanceListener) -> None: ...

    def assignment(self) -> set[TopicPartition]: ...

    def pause(self, *partitions: TopicPartition) -> None: ...

    def resume(self, *partitions: TopicPartition) -> None: ...

    async def commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None: ...

    def request_rejoin(self) -> None:
        """Rejoin the group on the next poll (a probing rebalance)."""
        ...

    def generation_lost(self) -> bool:
        """True once the coordinator has dropped this member (its partitions now belong to others)."""
        ...

    def group_metadata(self) -> GroupMetadata:
        """Generation, member id and instance id: what a transactional offset commit is fenced by."""
        ...


class Producer(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class KafkaClientSupplier(Protocol):
    """Builds the clients of one stream thread."""

    def main_consumer(
        self,
        config: StreamsConfig,
        client_id: str,
        assignor: AbstractPartitionAssignor,
        group_instance_id: str | None = None,
    ) -> MainConsumer: ...

    def restore_consumer(self, config: StreamsConfig, client_id: str) -> RestoreConsumer: ...

    def producer(
        self, config: StreamsConfig, client_id: str, transactional_id: str | None = None
    ) -> AIOKafkaProducer: ...


class StreamsConsumer(AIOKafkaConsumer):
    """aiokafka's consumer plus the two group-membership questions a stream thread asks."""

    def request_rejoin(self) -> None:
        coordinator = self._coordinator
        if coordinator is not None:
            coordinator.request_rejoin()

    def generation_lost(self) -> bool:
        coordinator = self._coordinator
        return coordinator is not None and coordinator.generation == NO_GENERATION

    def group_metadata(self) -> GroupMetadata:
        coordinator = self._coordinator
        if coordinator is None:
            return GroupMetadata(NO_GENERATION, "", self._group_instance_id)
        return GroupMetadata(coordinator.generation, coordinator.member_id, self._group_instance_id)


class AioKafkaClientSupplier:
    """The default supplier: aiokafka clients configured as Kafka Streams configures its own."""

    def main_consumer(
        self,
        config: StreamsConfig,
        client_id: str,
        assignor: AbstractPartitionAssignor,
        group_instance_id: str | None = None,
    ) -> StreamsConsumer:
        return StreamsConsumer(
            bootstrap_servers=config.bootstrap_servers,
            group_id=config.application_id,
            group_instance_id=group_instance_id,
            client_id=client_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            partition_assignment_strategy=(assignor,),
            max_poll_records=config.max_poll_records,
            session_timeout_ms=config.session_timeout_ms,
            heartbeat_interval_ms=config.heartbeat_interval_ms,
            rebalance_timeout_ms=config.rebalance_timeout_ms,
            max_poll_interval_ms=config.max_poll_interval_ms,
            metadata_max_age_ms=30_000,
            isolation_level=_isolation(config),
        )

    def restore_consumer(self, config: StreamsConfig, client_id: str) -> AIOKafkaConsumer:
        return AIOKafkaConsumer(
            bootstrap_servers=config.bootstrap_servers,
            group_id=None,
            client_id=client_id,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            isolation_level=_isolation(config),
            # aiokafka's default 1 MiB: with 4 MiB, aiokafka 0.14 was seen returning no records for a large
            # freshly written changelog while moving the position to the end (bench/README.md)
        )

    def producer(self, config: StreamsConfig, client_id: str, transactional_id: str | None = None) -> AIOKafkaProducer:
        if transactional_id is not None:
            txn_offset_commit.install()  # TxnOffsetCommit v3: zombies cannot commit (KIP-447)
        return AIOKafkaProducer(
            bootstrap_servers=config.bootstrap_servers,
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
