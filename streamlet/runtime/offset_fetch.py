"""Stable committed offsets under exactly-once (KIP-447): OffsetFetch v7 with `require_stable`.

A transaction's input offsets stay pending in the group coordinator until its commit marker is written,
and the markers of one transaction land on its partitions one by one. aiokafka 0.14 fetches committed
offsets with OffsetFetch v1 to v3, which answer with the offsets from before a pending commit. A task
that moves while its previous owner's transaction is completing would then start from those older
offsets, while its restoration (which runs to the log end, so waits for that transaction) holds the
transaction's state updates: the same input would count twice. With `require_stable` the coordinator
answers UNSTABLE_OFFSET_COMMIT until the transaction is complete, and the consumer retries, as Kafka's
own consumer does under read_committed.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from typing import Any

from aiokafka import errors as Errors
from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.types import Boolean, CompactArray, CompactString, Int16, Int32, Int64, Schema, TaggedFields
from aiokafka.structs import OffsetAndMetadata, TopicPartition

#: No committed offset for a partition.
UNKNOWN_OFFSET = -1


class UnstableOffsetCommitError(Errors.KafkaError):
    """A transaction with pending offsets for the partition has not completed yet (retried)."""

    errno = 88
    message = "UNSTABLE_OFFSET_COMMIT"
    description = "There are unstable offsets that need to be cleared."
    retriable = True


class OffsetFetchResponse_v7(Response):
    API_KEY = 9
    API_VERSION = 7
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
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
                        ("metadata", CompactString("utf-8")),
                        ("error_code", Int16),
                        ("tags", TaggedFields),
                    ),
                ),
                ("tags", TaggedFields),
            ),
        ),
        ("error_code", Int16),
        ("tags", TaggedFields),
    )


class OffsetFetchRequest_v7(RequestStruct):
    FLEXIBLE_VERSION = True
    API_KEY = 9
    API_VERSION = 7
    RESPONSE_TYPE = OffsetFetchResponse_v7
    SCHEMA = Schema(
        ("group_id", CompactString("utf-8")),
        (
            "topics",
            CompactArray(
                ("name", CompactString("utf-8")), ("partition_indexes", CompactArray(Int32)), ("tags", TaggedFields)
            ),
        ),
        ("require_stable", Boolean),
        ("tags", TaggedFields),
    )


class StableOffsetFetchRequest(Request[OffsetFetchRequest_v7]):
    API_KEY = 9

    def __init__(self, group_id: str, topics: list[tuple[str, list[int]]]) -> None:
        self._group_id = group_id
        self._topics = topics

    def build(self, request_struct_class: type[OffsetFetchRequest_v7]) -> OffsetFetchRequest_v7:
        return request_struct_class(self._group_id, [(t, ps, {}) for t, ps in self._topics], True, {})


async def fetch_stable_offsets(coordinator: Any, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, Any]:
    """aiokafka's `GroupCoordinator._do_fetch_commit_offsets`, asking for stable offsets only.

    Raises a retriable error while an offset is unstable: aiokafka's callers back off and ask again.
    """
    by_topic: dict[str, list[int]] = collections.defaultdict(list)
    for tp in partitions:
        by_topic[tp.topic].append(tp.partition)
    response = await coordinator._send_req(StableOffsetFetchRequest(coordinator.group_id, list(by_topic.items())))
    _raise_for(coordinator, response.error_code, None)
    offsets: dict[TopicPartition, Any] = {}
    for topic, topic_partitions, _tags in response.topics:
        for partition, offset, _epoch, metadata, error_code, _ptags in topic_partitions:
            tp = TopicPartition(topic, partition)
            if _raise_for(coordinator, error_code, tp) and offset != UNKNOWN_OFFSET:
                offsets[tp] = OffsetAndMetadata(offset, metadata or "")
    return offsets


def _raise_for(coordinator: Any, error_code: int, tp: TopicPartition | None) -> bool:
    """aiokafka's handling of an OffsetFetch error, plus UNSTABLE_OFFSET_COMMIT; False: skip the partition."""
    if error_code == 0:
        return True
    if error_code == UnstableOffsetCommitError.errno:
        raise UnstableOffsetCommitError(f"{tp} has a transactional offset commit in progress")
    error_type = Errors.for_code(error_code)
    if error_type is Errors.GroupLoadInProgressError:
        raise error_type()
    if error_type is Errors.NotCoordinatorForGroupError:
        coordinator.coordinator_dead()
        raise error_type()
    if error_type is Errors.UnknownTopicOrPartitionError:
        return False
    if error_type is Errors.GroupAuthorizationFailedError:
        raise error_type(coordinator.group_id)
    raise Errors.KafkaError(f"fetching the committed offset of {tp or 'the group'} failed: {error_type()!r}")
