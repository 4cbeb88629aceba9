"""Kafka Streams' `SessionKeySchema` store keys: the record key's bytes, the 8-byte big-endian session end,
then the 8-byte big-endian session start.

The end comes first so that the sessions of a key that may overlap `[earliest_end, latest_start]` are one
byte range, `key + earliest_end + 0` to `key + MAX + latest_start` (Kafka's `lowerRangeFixedSize` /
`upperRangeFixedSize`). These are the keys of a session store's changelog, so restoration and other readers
see Kafka's format.
"""

from __future__ import annotations

import struct

_SUFFIX = struct.Struct(">qq")
SUFFIX_SIZE = _SUFFIX.size  # 16
_MAX = 2**63 - 1


def to_store_key(key: bytes, start: int, end: int) -> bytes:
    """`SessionKeySchema.toBinary`."""
    return key + _SUFFIX.pack(end, start)


def end_of(store_key: bytes) -> int:
    """`SessionKeySchema.extractEndTimestamp` (also the segment timestamp)."""
    return int(_SUFFIX.unpack_from(store_key, len(store_key) - SUFFIX_SIZE)[0])


def start_of(store_key: bytes) -> int:
    return int(_SUFFIX.unpack_from(store_key, len(store_key) - SUFFIX_SIZE)[1])


def key_of(store_key: bytes) -> bytes:
    return store_key[:-SUFFIX_SIZE]


def search_range(key: bytes, earliest_end: int, latest_start: int) -> tuple[bytes, bytes]:
    """Bounds of the store keys `find_sessions` scans; other keys sharing `key` as a prefix fall in between
    too, so callers keep only entries whose `key_of` is `key` (Kafka's `hasNextCondition`)."""
    return key + _SUFFIX.pack(max(0, earliest_end), 0), key + _SUFFIX.pack(_MAX, latest_start)
