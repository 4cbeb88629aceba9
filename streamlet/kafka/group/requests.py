"""The group coordinator's requests that aiokafka 0.14 lacks at the versions streamlet needs.

JoinGroup v5 and SyncGroup v3 are aiokafka's own (they carry the group instance id). Heartbeat, LeaveGroup and
OffsetCommit are defined here at the versions that carry `group_instance_id` (KIP-345), so a static member is
fenced by its instance id everywhere, and OffsetFetch at v7, which can ask for stable offsets only (KIP-447).
"""

from __future__ import annotations

from aiokafka.protocol.api import Request, RequestStruct, Response
from aiokafka.protocol.types import (
    Array,
    Boolean,
    CompactArray,
    CompactString,
    Int16,
    Int32,
    Int64,
    Schema,
    String,
    TaggedFields,
)


class HeartbeatResponse_v3(Response):
    API_KEY = 12
    API_VERSION = 3
    SCHEMA = Schema(("throttle_time_ms", Int32), ("error_code", Int16))


class HeartbeatRequest_v3(RequestStruct):
    API_KEY = 12
    API_VERSION = 3
    RESPONSE_TYPE = HeartbeatResponse_v3
    SCHEMA = Schema(
        ("group_id", String("utf-8")),
        ("generation_id", Int32),
        ("member_id", String("utf-8")),
        ("group_instance_id", String("utf-8")),
    )


class HeartbeatRequest(Request[HeartbeatRequest_v3]):
    API_KEY = 12

    def __init__(self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None) -> None:
        self._args = (group_id, generation_id, member_id, group_instance_id)

    def build(self, request_struct_class: type[HeartbeatRequest_v3]) -> HeartbeatRequest_v3:
        return request_struct_class(*self._args)


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


class LeaveGroupRequest(Request[LeaveGroupRequest_v3]):
    """KIP-345's LeaveGroup: names the member by its instance id too, so a static member can leave."""

    API_KEY = 13

    def __init__(self, group_id: str, member_id: str, group_instance_id: str | None) -> None:
        self._group_id = group_id
        self._members = [(member_id, group_instance_id)]

    def build(self, request_struct_class: type[LeaveGroupRequest_v3]) -> LeaveGroupRequest_v3:
        return request_struct_class(self._group_id, self._members)


class OffsetCommitResponse_v7(Response):
    API_KEY = 8
    API_VERSION = 7
    SCHEMA = Schema(
        ("throttle_time_ms", Int32),
        (
            "topics",
            Array(("name", String("utf-8")), ("partitions", Array(("partition_index", Int32), ("error_code", Int16)))),
        ),
    )


class OffsetCommitRequest_v7(RequestStruct):
    API_KEY = 8
    API_VERSION = 7
    RESPONSE_TYPE = OffsetCommitResponse_v7
    SCHEMA = Schema(
        ("group_id", String("utf-8")),
        ("generation_id", Int32),
        ("member_id", String("utf-8")),
        ("group_instance_id", String("utf-8")),
        (
            "topics",
            Array(
                ("name", String("utf-8")),
                (
                    "partitions",
                    Array(
                        ("partition_index", Int32),
                        ("committed_offset", Int64),
                        ("committed_leader_epoch", Int32),
                        ("committed_metadata", String("utf-8")),
                    ),
                ),
            ),
        ),
    )


#: "no leader epoch" in an offset commit
NO_LEADER_EPOCH = -1


class OffsetCommitRequest(Request[OffsetCommitRequest_v7]):
    API_KEY = 8

    def __init__(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        topics: list[tuple[str, list[tuple[int, int, str]]]],
    ) -> None:
        self._head = (group_id, generation_id, member_id, group_instance_id)
        self._topics = [(t, [(p, o, NO_LEADER_EPOCH, m) for p, o, m in ps]) for t, ps in topics]

    def build(self, request_struct_class: type[OffsetCommitRequest_v7]) -> OffsetCommitRequest_v7:
        return request_struct_class(*self._head, self._topics)


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


class OffsetFetchRequest(Request[OffsetFetchRequest_v7]):
    """With `require_stable` (exactly-once) the coordinator answers UNSTABLE_OFFSET_COMMIT for a partition while a
    transaction holds pending offsets for it, so a task never starts from offsets older than its restored state."""

    API_KEY = 9

    def __init__(self, group_id: str, topics: list[tuple[str, list[int]]], require_stable: bool) -> None:
        self._group_id = group_id
        self._topics = topics
        self._require_stable = require_stable

    def build(self, request_struct_class: type[OffsetFetchRequest_v7]) -> OffsetFetchRequest_v7:
        return request_struct_class(self._group_id, [(t, ps, {}) for t, ps in self._topics], self._require_stable, {})
