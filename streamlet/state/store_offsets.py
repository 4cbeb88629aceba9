"""Store-managed changelog offsets (KIP-1035): the format of a RocksDB store's `offsets` column family.

A RocksDB store keeps, next to its data, the offset of the last changelog record its data reflects, written in
the same WriteBatch as the data it covers: the store and its offset cannot disagree, as a store and a separate
`.checkpoint` file could. Kafka Streams' format (`AbstractColumnFamilyAccessor`): column family `offsets`, key
the UTF-8 `TopicPartition.toString()` ("<topic>-<partition>"), value the offset as a big-endian 8-byte long.
Kafka also keeps an open/closed `status` key and a `position` key there; streamlet writes neither and skips
them on reading (a store written by Kafka Streams stays readable).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any

from aiokafka.structs import TopicPartition

from streamlet.errors import StateStoreCorruptedError

OFFSETS_COLUMN_FAMILY_NAME = "offsets"
#: Kafka's reserved keys of the column family (not changelog partitions).
RESERVED_KEYS = frozenset({b"status", b"position"})
_OFFSET = struct.Struct(">q")


def offset_key(tp: TopicPartition) -> bytes:
    return f"{tp.topic}-{tp.partition}".encode()


def offset_value(offset: int) -> bytes:
    return _OFFSET.pack(offset)


def decode_offsets(entries: Iterable[Any], where: str) -> dict[TopicPartition, int]:
    """The changelog offsets of an `offsets` column family; a malformed entry raises StateStoreCorruptedError
    (the store is then wiped and restored, as a corrupt `.checkpoint` was)."""
    offsets: dict[TopicPartition, int] = {}
    for key, value in entries:
        if key in RESERVED_KEYS:
            continue
        topic, sep, partition = key.decode("utf-8", "replace").rpartition("-")
        if not sep or not topic or not partition.isdigit() or len(value) != _OFFSET.size:
            raise StateStoreCorruptedError(f"{where}: malformed changelog offset entry {key!r} -> {value!r}")
        (offset,) = _OFFSET.unpack(value)
        if offset < 0:
            raise StateStoreCorruptedError(f"{where}: invalid changelog offset {offset} for {key.decode()}")
        offsets[TopicPartition(topic, int(partition))] = offset
    return offsets
