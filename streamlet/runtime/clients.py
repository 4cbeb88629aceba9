"""Kafka clients of a stream thread, from one injectable supplier (Kafka Streams' KafkaClientSupplier).

The runtime only talks to the small protocols below, so unit tests drive a stream thread, its task
manager and its changelog reader with in-memory fakes (as Kafka Streams' own tests use MockConsumer),
and the default supplier builds aiokafka clients with the settings a stream thread needs.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Protocol

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener
from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from aiokafka.errors import KafkaError
from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.group import JoinGroupRequest
from aiokafka.protocol.types import Array, Int16, Int32, Schema, String
from aiokafka.structs import OffsetAndMetadata, TopicPartition

from streamlet.config import StreamsConfig
from streamlet.kafka.record_blocks import BlockRestoreConsumer
from streamlet.runtime import txn_offset_commit
from streamlet.runtime.fetched_records import RAW_RECORDS, FetchedRecord
from streamlet.runtime.offset_fetch import fetch_stable_offsets
from streamlet.runtime.txn_offset_commit import GroupMetadata

log = logging.getLogger("streamlet.thread")

#: aiokafka's generation id of a member that has none (it was fenced, or never joined).
NO_GENERATION = -1
UNKNOWN_MEMBER_ID = JoinGroupRequest.UNKNOWN_MEMBER_ID


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

    def subscribe(self, topics: Collection[str], listener: ConsumerRebalanceListener) -> None: ...

    def assignment(self) -> set[TopicPartition]: ...

    def pause(self, *partitions: TopicPartition) -> None: ...

    def resume(self, *partitions: TopicPartition) -> None: ...

    async def commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None: ...

    async def committed_offsets(
        self, partitions: Collection[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """The group's committed offsets of `partitions`, with their metadata (partitions never committed: absent)."""
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
        self,
        config: StreamsConfig,
        client_id: str,
        assignor: AbstractPartitionAssignor,
        group_instance_id: str | None = None,
    ) -> MainConsumer: ...

    def restore_consumer(self, config: StreamsConfig, client_id: str) -> RestoreConsumer: ...

    def admin_consumer(self, config: StreamsConfig, client_id: str) -> RestoreConsumer:
        """What Kafka Streams' admin client does for the runtime: list log-end offsets (never fetch records)."""
        ...

    def producer(
        self, config: StreamsConfig, client_id: str, transactional_id: str | None = None
    ) -> AIOKafkaProducer: ...


class StreamsConsumer(AIOKafkaConsumer):
    """aiokafka's consumer plus the group-membership questions a stream thread asks.

    With `require_stable_offsets` (exactly-once) it fetches committed offsets as Kafka's consumer does under
    read_committed: only once no transaction holds pending offsets for them (`offset_fetch`).
    """

    def __init__(self, *topics: str, require_stable_offsets: bool = False, **config: Any) -> None:
        super().__init__(*topics, **config)
        self._require_stable_offsets = require_stable_offsets

    async def start(self) -> None:
        await super().start()
        coordinator = self._coordinator
        if self._require_stable_offsets and coordinator is not None:
            coordinator._do_fetch_commit_offsets = functools.partial(fetch_stable_offsets, coordinator)

    async def committed_offsets(
        self, partitions: Collection[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        # aiokafka's `committed()` drops the metadata; its coordinator keeps it (and, under exactly-once,
        # waits for stable offsets, see `offset_fetch`)
        if not partitions:
            return {}
        offsets = await self._coordinator.fetch_committed_offsets(list(partitions))
        return {tp: meta for tp, meta in offsets.items() if meta.offset >= 0}

    def request_rejoin(self) -> None:
        coordinator = self._coordinator
        if coordinator is not None:
            coordinator.request_rejoin()

    def generation_lost(self) -> bool:
        coordinator = self._coordinator
        return coordinator is not None and coordinator.generation == NO_GENERATION

    async def leave_group(self) -> None:
        # aiokafka sends LeaveGroup only for dynamic members, and only v0/v1, which cannot name an instance id
        coordinator = self._coordinator
        if coordinator is None or coordinator.member_id == UNKNOWN_MEMBER_ID:
            return
        request = LeaveGroupRequestV3(coordinator.group_id, coordinator.member_id, self._group_instance_id)
        try:
            await coordinator._send_req(request)
        except KafkaError as exc:
            log.warning("LeaveGroup for %s failed: %r", self._group_instance_id or coordinator.member_id, exc)
        coordinator.reset_generation()

    def lag(self, partition: TopicPartition) -> int | None:
        # aiokafka keeps both per assigned partition; `position()` would wait for one, this never waits
        subscription = self._subscription.subscription
        assignment = subscription.assignment if subscription is not None else None
        state = assignment.state_value(partition) if assignment is not None else None
        if state is None or not state.has_valid_position:
            return None
        # under read_committed the position stops at the LSO, before another producer's open transaction
        end = state.lso if self._isolation_level == "read_committed" else state.highwater
        if end is None or end < 0:
            return None
        return max(0, int(end) - int(state.position))

    def group_metadata(self) -> GroupMetadata:
        coordinator = self._coordinator
        if coordinator is None:
            return GroupMetadata(NO_GENERATION, "", self._group_instance_id)
        return GroupMetadata(coordinator.generation, coordinator.member_id, self._group_instance_id)


class LeaveGroupResponse_v3(Response):
    API_KEY = 13
    API_VERSION = 3
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        ("error_code", Int16),
        (
            "members",
            Array(("member_id", String("utf-8")), ("group_instance_id", String("utf-8")), ("error_code", Int16)),
        ),
    )


class LeaveGroupRequest_v3(RequestStruct):
    API_KEY = 13
    API_VERSION = 3
    RESPONSE_TYPE = LeaveGroupResponse_v3
    SCHEMA = Schema(
        ("group_id", String("utf-8")),
        ("members", Array(("member_id", String("utf-8")), ("group_instance_id", String("utf-8")))),
    )


class LeaveGroupRequestV3(Request[LeaveGroupRequest_v3]):
    """KIP-345's LeaveGroup: names the member by its instance id, so a static member can leave."""

    API_KEY = 13

    def __init__(self, group_id: str, member_id: str, group_instance_id: str | None) -> None:
        self._group_id = group_id
        self._members = [(member_id, group_instance_id)]

    def build(self, request_struct_class: type[LeaveGroupRequest_v3]) -> LeaveGroupRequest_v3:
        return request_struct_class(self._group_id, self._members)


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
            require_stable_offsets=config.exactly_once,
            key_deserializer=RAW_RECORDS,  # decoded batch records, no per-record ConsumerRecord
        )

    def restore_consumer(self, config: StreamsConfig, client_id: str) -> AIOKafkaConsumer:
        return BlockRestoreConsumer(  # record batches decoded into columns (streamlet.kafka.record_blocks)
            bootstrap_servers=config.bootstrap_servers,
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
        return AIOKafkaConsumer(
            bootstrap_servers=config.bootstrap_servers,
            group_id=None,
            client_id=client_id,
            enable_auto_commit=False,
            isolation_level="read_uncommitted",
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
