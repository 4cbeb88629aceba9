"""Fencing zombies under exactly-once (KIP-447): TxnOffsetCommit v3 carries the consumer's group metadata.

aiokafka 0.14 commits a transaction's input offsets with TxnOffsetCommit v0 (group id only), which the group
coordinator accepts from any producer, so a zombie (a worker whose tasks already moved) could still commit.
Version 3 adds the member's generation, member id and group instance id, which the coordinator checks like a
plain offset commit: a stale member gets ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID, its
transaction cannot commit, and is aborted. Kafka 4.1 serves v0 to v5 (checked on the project's broker).

aiokafka builds the request in its sender's `TxnOffsetCommitHandler`; `install()` replaces that class with
one that sends v3 when the producer carries group metadata (set per commit by `set_group_metadata`), and
behaves exactly as aiokafka's otherwise.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import Any

import aiokafka.producer.sender as aiokafka_sender
from aiokafka import AIOKafkaProducer
from aiokafka import errors as Errors
from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.types import CompactArray, CompactString, Int16, Int32, Int64, Schema, TaggedFields
from aiokafka.structs import TopicPartition

#: Errors that mean "this member's view of the group is stale": the commit is fenced, the txn must abort.
FENCED = (Errors.IllegalGenerationError, Errors.UnknownMemberIdError, Errors.RebalanceInProgressError)
# FENCED_INSTANCE_ID: another static member took this one's group.instance.id. aiokafka has no class for it
# (for_code gives UnknownError), so it is matched by its code.
FENCED_INSTANCE_ID = 82


@dataclass(frozen=True)
class GroupMetadata:
    """The consumer's group metadata (Java's ConsumerGroupMetadata)."""

    generation_id: int
    member_id: str
    group_instance_id: str | None


class TxnOffsetCommitResponse_v3(Response):
    API_KEY = 28
    API_VERSION = 3
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        (
            "topics",
            CompactArray(
                ("name", CompactString("utf-8")),
                ("partitions", CompactArray(("partition_index", Int32), ("error_code", Int16), ("tags", TaggedFields))),
                ("tags", TaggedFields),
            ),
        ),
        ("tags", TaggedFields),
    )


class TxnOffsetCommitRequest_v3(RequestStruct):
    FLEXIBLE_VERSION = True
    API_KEY = 28
    API_VERSION = 3
    RESPONSE_TYPE = TxnOffsetCommitResponse_v3
    SCHEMA = Schema(
        ("transactional_id", CompactString("utf-8")),
        ("group_id", CompactString("utf-8")),
        ("producer_id", Int64),
        ("producer_epoch", Int16),
        ("generation_id", Int32),
        ("member_id", CompactString("utf-8")),
        ("group_instance_id", CompactString("utf-8")),
        (
            "topics",
            CompactArray(
                ("name", CompactString("utf-8")),
                (
                    "partitions",
                    CompactArray(
                        ("partition_index", Int32),
                        ("committed_offset", Int64),
                        ("committed_leader_epoch", Int32),
                        ("committed_metadata", CompactString("utf-8")),
                        ("tags", TaggedFields),
                    ),
                ),
                ("tags", TaggedFields),
            ),
        ),
        ("tags", TaggedFields),
    )


class TxnOffsetCommitRequestV3(Request[TxnOffsetCommitRequest_v3]):
    API_KEY = 28

    def __init__(
        self,
        transactional_id: str,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        group: GroupMetadata,
        topics: list[tuple[str, list[tuple[int, int, str]]]],
    ) -> None:
        self._args = (transactional_id, group_id, producer_id, producer_epoch, group)
        self._topics = topics

    def build(self, request_struct_class: type[TxnOffsetCommitRequest_v3]) -> TxnOffsetCommitRequest_v3:
        transactional_id, group_id, producer_id, producer_epoch, group = self._args
        topics: list[Any] = [
            (topic, [(partition, offset, -1, metadata, {}) for partition, offset, metadata in partitions], {})
            for topic, partitions in self._topics
        ]
        return request_struct_class(
            transactional_id,
            group_id,
            producer_id,
            producer_epoch,
            group.generation_id,
            group.member_id,
            group.group_instance_id,
            topics,
            {},
        )


_BaseHandler: Any = aiokafka_sender.TxnOffsetCommitHandler


class GroupAwareTxnOffsetCommitHandler(_BaseHandler):  # type: ignore[misc]
    """aiokafka's handler, sending v3 with the group metadata when the producer has some."""

    def create_request(self) -> Any:
        txn_manager = self._sender._txn_manager
        group: GroupMetadata | None = getattr(txn_manager, "streamlet_group_metadata", None)
        if group is None:
            return super().create_request()
        offset_data: dict[str, list[tuple[int, int, str]]] = collections.defaultdict(list)
        for tp, offset in sorted(self._offsets.items()):
            offset_data[tp.topic].append((tp.partition, offset.offset, offset.metadata))
        return TxnOffsetCommitRequestV3(
            txn_manager.transactional_id,
            self._group_id,
            txn_manager.producer_id,
            txn_manager.producer_epoch,
            group,
            list(offset_data.items()),
        )

    def handle_response(self, resp: Any) -> float | None:
        if not isinstance(resp, TxnOffsetCommitResponse_v3):
            return super().handle_response(resp)  # type: ignore[no-any-return]
        txn_manager = self._sender._txn_manager
        for topic, partitions, _tags in resp.topics:
            for partition, error_code, _ptags in partitions:
                error_type = Errors.for_code(error_code)
                tp = TopicPartition(topic, partition)
                if error_type is Errors.NoError:
                    txn_manager.offset_committed(tp, self._offsets[tp].offset, self._group_id)
                elif error_type in FENCED or error_code == FENCED_INSTANCE_ID:
                    # not fatal for the producer: the transaction aborts and the thread rejoins
                    txn_manager.error_transaction(
                        Errors.CommitFailedError(f"{error_type.__name__}: the group moved {tp} to another member")
                    )
                    return None
                elif error_type in (
                    Errors.CoordinatorNotAvailableError,
                    Errors.NotCoordinatorError,
                    Errors.RequestTimedOutError,
                ):
                    self._sender._coordinator_dead(aiokafka_sender.CoordinationType.GROUP)
                    return self._default_backoff  # type: ignore[no-any-return]
                elif error_type in (Errors.CoordinatorLoadInProgressError, Errors.UnknownTopicOrPartitionError):
                    return self._default_backoff  # type: ignore[no-any-return]
                else:
                    return super().handle_response(_as_v0(resp))  # type: ignore[no-any-return]
        return None


class _V0View:
    """A v3 response in v0's shape, for aiokafka's own error handling."""

    def __init__(self, errors: list[tuple[str, list[tuple[int, int]]]]) -> None:
        self.errors = errors


def _as_v0(resp: TxnOffsetCommitResponse_v3) -> _V0View:
    return _V0View([(topic, [(p, e) for p, e, _ in partitions]) for topic, partitions, _ in resp.topics])


def install() -> None:
    """Make aiokafka's producers send TxnOffsetCommit v3 when they carry group metadata (idempotent)."""
    aiokafka_sender.TxnOffsetCommitHandler = GroupAwareTxnOffsetCommitHandler


def set_group_metadata(producer: AIOKafkaProducer, group: GroupMetadata | None) -> None:
    """The metadata the next transactional offset commit of `producer` carries."""
    txn_manager = getattr(producer, "_txn_manager", None)  # test doubles have none
    if txn_manager is not None:
        txn_manager.streamlet_group_metadata = group
