"""Binary user data of the Streams rebalance protocol: what each member sends and what the leader returns.

Kafka Streams' SubscriptionInfo/AssignmentInfo carry the same facts (process id, task offset sums,
previous tasks; active and standby tasks, follow-up deadline, and every client's host with the tasks it
runs, for interactive queries). streamlet's encoding is its own, compact and versioned: the first byte is
the version, and a version this build does not know is a clear error instead of a misread assignment.

Subscription versions: 1 = process id, unique field, error code, host, previous tasks, task offset sums;
2 appends the client's KIP-708 `client_tags`, laid out as Kafka's `SubscriptionInfoData` v11 `clientTags`
(int32 count, then per tag an int32-length key and an int32-length value, UTF-8; tags sorted by key so
the bytes are deterministic). This build reads 1 and 2, and writes version 2 only for a client with tags:
without them it writes version 1 (second byte: latest supported, 2), which the builds before tags read, so
a rolling upgrade of a group without tags mixes builds safely (a version 1 member has no tags). The leader
derives a client's previous tasks from its owned partitions and offset sums, as Kafka Streams'
`initializePrevTasks` does; members still write the previous-task lists, for leaders of older builds.

Assignment versions: 1 = tasks, error code, follow-up deadline; 2 adds `tasks_by_host` (Kafka Streams'
`partitionsByHost`/`standbyPartitionByHost`, as tasks: a store partition is its task's partition). This
build writes version 2 and reads 1 and 2 (a version 1 assignment has no host map).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from streamlet.errors import TaskAssignmentError
from streamlet.task_id import TaskId

SUBSCRIPTION_VERSION = 2
SUPPORTED_SUBSCRIPTION_VERSIONS = (1, 2)
ASSIGNMENT_VERSION = 2
SUPPORTED_ASSIGNMENT_VERSIONS = (1, 2)
NO_FOLLOWUP = -1  # next_rebalance_ms: no follow-up rebalance requested

_TASK = struct.Struct(">ii")
_TASK_SUM = struct.Struct(">iiq")
_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")


class AssignorErrorCode:
    """Error codes carried in the assignment, as in Kafka Streams' `AssignorError`."""

    NONE = 0
    INCOMPLETE_SOURCE_TOPIC_METADATA = 1
    ASSIGNMENT_ERROR = 3
    SHUTDOWN_REQUESTED = 4


@dataclass(frozen=True)
class SubscriptionInfo:
    """One stream thread's subscription: who it is and what state its client holds."""

    process_id: uuid.UUID
    task_offset_sums: Mapping[TaskId, int] = field(default_factory=dict)
    prev_active: frozenset[TaskId] = frozenset()
    prev_standby: frozenset[TaskId] = frozenset()
    host_info: str = ""
    unique_field: int = 0  # changes on every join so a rejoining follower always triggers a rebalance
    error_code: int = AssignorErrorCode.NONE
    #: KIP-708 client tags (`client_tags`), read by the leader's rack-aware standby assignor
    client_tags: Mapping[str, str] = field(default_factory=dict)

    def encode(self) -> bytes:
        host = self.host_info.encode()
        version = SUBSCRIPTION_VERSION if self.client_tags else 1
        parts = [
            bytes((version, SUBSCRIPTION_VERSION)),
            self.process_id.bytes,
            struct.pack(">bi", _to_int8(self.unique_field), self.error_code),
            struct.pack(">h", len(host)),
            host,
            _encode_tasks(self.prev_active),
            _encode_tasks(self.prev_standby),
            _INT.pack(len(self.task_offset_sums)),
        ]
        parts.extend(_TASK_SUM.pack(t.subtopology, t.partition, s) for t, s in sorted(self.task_offset_sums.items()))
        if version >= 2:
            parts.append(_INT.pack(len(self.client_tags)))
            for key, value in sorted(self.client_tags.items()):
                parts.extend(_sized(key.encode()) + _sized(value.encode()))
        return b"".join(parts)

    @classmethod
    def decode(cls, data: bytes) -> SubscriptionInfo:
        reader = _Reader(data, "subscription")
        version = reader.version(*SUPPORTED_SUBSCRIPTION_VERSIONS)
        reader.skip(1)  # latest supported version, for future version probing
        process_id = uuid.UUID(bytes=reader.take(16))
        unique_field, error_code = reader.unpack(">bi")
        host = reader.take(reader.unpack(">h")[0]).decode()
        prev_active = frozenset(reader.tasks())
        prev_standby = frozenset(reader.tasks())
        sums: dict[TaskId, int] = {}
        for _ in range(reader.unpack(">i")[0]):
            sub, part, offset_sum = reader.unpack(">iiq")
            sums[TaskId(sub, part)] = offset_sum
        tags: dict[str, str] = {}
        if version >= 2:
            for _ in range(reader.count("client tag")):
                key = reader.take(reader.count("tag key byte")).decode()
                tags[key] = reader.take(reader.count("tag value byte")).decode()
        reader.done()
        return cls(process_id, sums, prev_active, prev_standby, host, unique_field, error_code, tags)


@dataclass(frozen=True)
class HostTasks:
    """The tasks one client (one `application_server` host) runs: what interactive queries route by."""

    active: frozenset[TaskId] = frozenset()
    standby: frozenset[TaskId] = frozenset()


@dataclass(frozen=True)
class AssignmentInfo:
    """What one stream thread is told to run, and (version 2) which host runs which tasks."""

    active_tasks: tuple[TaskId, ...] = ()
    standby_tasks: tuple[TaskId, ...] = ()
    next_rebalance_ms: int = NO_FOLLOWUP  # epoch ms of a requested probing rebalance; 0 = at once
    error_code: int = AssignorErrorCode.NONE
    # application_server "host:port" -> the tasks its client runs; only clients that set application_server
    tasks_by_host: Mapping[str, HostTasks] = field(default_factory=dict)

    def encode(self) -> bytes:
        parts = [
            bytes((ASSIGNMENT_VERSION, ASSIGNMENT_VERSION)),
            _INT.pack(self.error_code),
            _encode_tasks(self.active_tasks),
            _encode_tasks(self.standby_tasks),
            _LONG.pack(self.next_rebalance_ms),
            _INT.pack(len(self.tasks_by_host)),
        ]
        for host in sorted(self.tasks_by_host):
            raw = host.encode()
            tasks = self.tasks_by_host[host]
            parts += [struct.pack(">h", len(raw)), raw, _encode_tasks(tasks.active), _encode_tasks(tasks.standby)]
        return b"".join(parts)

    @classmethod
    def decode(cls, data: bytes) -> AssignmentInfo:
        reader = _Reader(data, "assignment")
        version = reader.version(*SUPPORTED_ASSIGNMENT_VERSIONS)
        reader.skip(1)
        (error_code,) = reader.unpack(">i")
        active = tuple(reader.tasks())
        standby = tuple(reader.tasks())
        (next_rebalance_ms,) = reader.unpack(">q")
        by_host: dict[str, HostTasks] = {}
        if version >= 2:
            (hosts,) = reader.unpack(">i")
            if hosts < 0:
                raise TaskAssignmentError("corrupt assignment user data: negative host count")
            for _ in range(hosts):
                host = reader.take(reader.unpack(">h")[0]).decode()
                by_host[host] = HostTasks(frozenset(reader.tasks()), frozenset(reader.tasks()))
        reader.done()
        return cls(active, standby, next_rebalance_ms, error_code, by_host)


def _to_int8(value: int) -> int:
    return ((value + 128) % 256) - 128


def _sized(data: bytes) -> list[bytes]:
    """Kafka's `bytes` field in a non-flexible message: int32 length, then the bytes."""
    return [_INT.pack(len(data)), data]


def _encode_tasks(tasks: Iterable[TaskId]) -> bytes:
    ordered = sorted(tasks)
    return _INT.pack(len(ordered)) + b"".join(_TASK.pack(t.subtopology, t.partition) for t in ordered)


class _Reader:
    def __init__(self, data: bytes | None, what: str) -> None:
        if not data:
            raise TaskAssignmentError(f"empty {what} user data: the member is not a streamlet client")
        self._data = data
        self._pos = 0
        self._what = what

    def version(self, *supported: int) -> int:
        version = self._data[0]
        if version not in supported:
            listing = " and ".join(map(str, supported))
            raise TaskAssignmentError(
                f"{self._what} user data has version {version}, this streamlet supports version {listing}; "
                "run the same streamlet version on every client of the application"
            )
        self._pos = 1
        return version

    def skip(self, n: int) -> None:
        self.take(n)

    def take(self, n: int) -> bytes:
        if n < 0 or self._pos + n > len(self._data):
            raise TaskAssignmentError(f"truncated {self._what} user data ({len(self._data)} bytes)")
        chunk = self._data[self._pos : self._pos + n]
        self._pos += n
        return chunk

    def unpack(self, fmt: str) -> tuple[int, ...]:
        size = struct.calcsize(fmt)
        return struct.unpack(fmt, self.take(size))

    def count(self, what: str) -> int:
        (count,) = self.unpack(">i")
        if count < 0:
            raise TaskAssignmentError(f"corrupt {self._what} user data: negative {what} count")
        return count

    def tasks(self) -> list[TaskId]:
        return [TaskId(*self.unpack(">ii")) for _ in range(self.count("task"))]

    def done(self) -> None:
        if self._pos != len(self._data):
            raise TaskAssignmentError(
                f"corrupt {self._what} user data: {len(self._data) - self._pos} unexpected trailing bytes"
            )
