"""Kafka's consumer protocol: the subscription and assignment bytes inside JoinGroup and SyncGroup.

The broker never reads them; members do. Kafka's schemas (ConsumerProtocolSubscription.json and
ConsumerProtocolAssignment.json) grow only at the end, so an older member still decodes a newer one's bytes:
v1 added the owned partitions (KIP-429), v2 the generation, v3 the rack. streamlet writes v3, as Kafka's
consumer does, and reads every version.
"""

from __future__ import annotations

import enum
import struct
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from io import BytesIO

from aiokafka.structs import TopicPartition

#: the protocol type every consumer group member names in its JoinGroup
PROTOCOL_TYPE = "consumer"
SUBSCRIPTION_VERSION = 3
ASSIGNMENT_VERSION = 3
NO_GENERATION = -1


class RebalanceProtocol(enum.Enum):
    """Kafka's `ConsumerPartitionAssignor.RebalanceProtocol`."""

    EAGER = "eager"
    COOPERATIVE = "cooperative"


@dataclass(frozen=True)
class Subscription:
    """One member's subscription, as the leader's assignor sees it (Java's `Subscription`)."""

    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation_id: int = NO_GENERATION
    rack_id: str | None = None
    group_instance_id: str | None = None  # from the JoinGroup member, not the bytes

    def encode(self) -> bytes:
        out = BytesIO()
        out.write(struct.pack(">h", SUBSCRIPTION_VERSION))
        out.write(struct.pack(">i", len(self.topics)))
        for topic in self.topics:
            _write_string(out, topic)
        _write_bytes(out, self.user_data)
        _write_partitions(out, self.owned_partitions)
        out.write(struct.pack(">i", self.generation_id))
        _write_string(out, self.rack_id)
        return out.getvalue()

    @classmethod
    def decode(cls, data: bytes, group_instance_id: str | None = None) -> Subscription:
        reader = _Reader(data)
        version = reader.int16()
        if version < 0:
            raise ValueError(f"consumer protocol subscription with negative version {version}")
        topics = tuple(reader.string() or "" for _ in range(reader.int32()))
        user_data = reader.bytes()
        owned: tuple[TopicPartition, ...] = ()
        generation = NO_GENERATION
        rack = None
        if version >= 1:
            owned = reader.partitions()
        if version >= 2:
            generation = reader.int32()
        if version >= 3:
            rack = reader.string()
        return cls(topics, user_data, owned, generation, rack, group_instance_id)


@dataclass(frozen=True)
class Assignment:
    """What the leader hands one member: its partitions and the assignor's user data."""

    partitions: tuple[TopicPartition, ...]
    user_data: bytes | None = None

    def encode(self) -> bytes:
        out = BytesIO()
        out.write(struct.pack(">h", ASSIGNMENT_VERSION))
        _write_partitions(out, self.partitions)
        _write_bytes(out, self.user_data)
        return out.getvalue()

    @classmethod
    def decode(cls, data: bytes) -> Assignment:
        if not data:  # a member the leader gave nothing (Kafka: an empty buffer is an empty assignment)
            return cls(())
        reader = _Reader(data)
        if reader.int16() < 0:
            raise ValueError("consumer protocol assignment with a negative version")
        partitions = reader.partitions()
        return cls(partitions, reader.bytes())


def _write_string(out: BytesIO, value: str | None) -> None:
    if value is None:
        out.write(struct.pack(">h", -1))
        return
    raw = value.encode("utf-8")
    out.write(struct.pack(">h", len(raw)))
    out.write(raw)


def _write_bytes(out: BytesIO, value: bytes | None) -> None:
    if value is None:
        out.write(struct.pack(">i", -1))
        return
    out.write(struct.pack(">i", len(value)))
    out.write(value)


def _write_partitions(out: BytesIO, partitions: Iterable[TopicPartition]) -> None:
    by_topic: dict[str, list[int]] = defaultdict(list)
    for tp in partitions:
        by_topic[tp.topic].append(tp.partition)
    out.write(struct.pack(">i", len(by_topic)))
    for topic in sorted(by_topic):
        _write_string(out, topic)
        numbers = sorted(by_topic[topic])
        out.write(struct.pack(f">i{len(numbers)}i", len(numbers), *numbers))


class _Reader:
    def __init__(self, data: bytes) -> None:
        self._data = memoryview(data)
        self._at = 0

    def _take(self, size: int) -> memoryview:
        end = self._at + size
        if size < 0 or end > len(self._data):
            raise ValueError("truncated consumer protocol bytes")
        chunk = self._data[self._at : end]
        self._at = end
        return chunk

    def int16(self) -> int:
        return int(struct.unpack(">h", self._take(2))[0])

    def int32(self) -> int:
        return int(struct.unpack(">i", self._take(4))[0])

    def string(self) -> str | None:
        size = self.int16()
        return None if size < 0 else bytes(self._take(size)).decode("utf-8")

    def bytes(self) -> bytes | None:
        size = self.int32()
        return None if size < 0 else bytes(self._take(size))

    def partitions(self) -> tuple[TopicPartition, ...]:
        out: list[TopicPartition] = []
        for _ in range(self.int32()):
            topic = self.string() or ""
            out.extend(TopicPartition(topic, self.int32()) for _ in range(self.int32()))
        return tuple(out)
