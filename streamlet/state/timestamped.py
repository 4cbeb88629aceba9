"""The value format of timestamped key-value stores (Kafka Streams' `ValueAndTimestamp` bytes).

Kafka Streams 4.x materializes every DSL aggregation in a `TimestampedKeyValueStore`: each stored value is
the 8-byte big-endian timestamp of the aggregate followed by the serialized aggregate
(`ValueAndTimestampSerializer`). The aggregate's timestamp is what its downstream updates carry, so it must
survive caching, flushing and restoration along with the value.

The changelog holds the plain value, with the aggregate's timestamp as the record timestamp
(`ChangeLoggingTimestampedKeyValueBytesStore`), and restoration puts the two back together
(`RecordConverters.rawValueToTimestampedValue`): the changelog stays readable by any consumer.
"""

from __future__ import annotations

import struct

TIMESTAMP_FORMAT = struct.Struct(">q")
TIMESTAMP_SIZE = TIMESTAMP_FORMAT.size


def encode(timestamp: int, value: bytes) -> bytes:
    """The stored bytes of `value` with `timestamp`."""
    return TIMESTAMP_FORMAT.pack(timestamp) + value


def timestamp_of(raw: bytes) -> int:
    """The timestamp of stored bytes."""
    return int(TIMESTAMP_FORMAT.unpack_from(raw)[0])


def value_of(raw: bytes) -> bytes:
    """The serialized value of stored bytes, without its timestamp."""
    return raw[TIMESTAMP_SIZE:]


def from_changelog(value: bytes | None, record_timestamp: int) -> bytes | None:
    """Stored bytes for a changelog record (a tombstone stays a delete)."""
    return None if value is None else encode(record_timestamp, value)
