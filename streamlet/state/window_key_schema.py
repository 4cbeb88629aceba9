"""Kafka Streams' `WindowKeySchema` store keys: the record key's bytes, the 8-byte big-endian window start and
a 4-byte big-endian sequence number (always 0: DSL window stores keep no duplicates).

These are the keys of a window store's changelog, so restoration and other readers see Kafka's format.
"""

from __future__ import annotations

import struct

_SUFFIX = struct.Struct(">qi")
SUFFIX_SIZE = _SUFFIX.size  # 12


def to_store_key(key: bytes, window_start: int, seqnum: int = 0) -> bytes:
    """`WindowKeySchema.toStoreKeyBinary`."""
    return key + _SUFFIX.pack(window_start, seqnum)


def window_start_of(store_key: bytes) -> int:
    """`WindowKeySchema.extractStoreTimestamp`."""
    return int(_SUFFIX.unpack_from(store_key, len(store_key) - SUFFIX_SIZE)[0])


def key_of(store_key: bytes) -> bytes:
    """`WindowKeySchema.extractStoreKeyBytes`."""
    return store_key[:-SUFFIX_SIZE]
