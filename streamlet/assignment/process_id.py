"""Process ids (one per worker process) and the order Kafka Streams sorts them in.

Kafka Streams keeps clients in a `TreeMap<ProcessId, ...>`, and `ProcessId.compareTo` delegates to
`java.util.UUID.compareTo`: most-significant 64 bits first, then least-significant, each compared as a
*signed* long. Python's `uuid.UUID` compares as an unsigned 128-bit number, which puts every UUID whose
first hex digit is 8-f in a different place. Round-robin targets, tie-breaks and therefore the whole
assignment depend on this order, so every sort of clients in this package goes through `java_uuid_key`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from functools import lru_cache

from streamlet.assignment.java_collections import java_hash_set_order

_U64 = 1 << 64
_I64_SIGN = 1 << 63


def _signed64(value: int) -> int:
    return value - _U64 if value >= _I64_SIGN else value


@lru_cache(maxsize=1 << 16)  # called per comparison in every client heap and sort; process ids repeat
def java_uuid_key(u: uuid.UUID) -> tuple[int, int]:
    """Sort key equal to `java.util.UUID.compareTo`: (signed msb, signed lsb)."""
    return _signed64(u.int >> 64), _signed64(u.int & (_U64 - 1))


@lru_cache(maxsize=1 << 16)
def java_uuid_hash_code(u: uuid.UUID) -> int:
    """`UUID.hashCode()` (= `ProcessId.hashCode()`): the two 32-bit halves of msb ^ lsb, xor-ed, as a signed int."""
    hilo = (u.int >> 64) ^ (u.int & (_U64 - 1))
    h = ((hilo >> 32) ^ hilo) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h


def process_id_hash_set_order(process_ids: Iterable[uuid.UUID]) -> list[uuid.UUID]:
    """A `HashSet<ProcessId>` (or a HashMap's ProcessId keys) filled in the given order, as Java iterates it."""
    return java_hash_set_order(process_ids, java_uuid_hash_code)


def sorted_process_ids(process_ids: Iterable[uuid.UUID]) -> list[uuid.UUID]:
    """The process ids in Kafka Streams' (Java UUID) order."""
    return sorted(process_ids, key=java_uuid_key)


def parse_process_id(text: str) -> uuid.UUID:
    """Parse a process id; raises ValueError naming the text if it is not a UUID."""
    try:
        return uuid.UUID(text)
    except (ValueError, AttributeError, TypeError) as exc:
        raise ValueError(f"not a process id (expected a UUID): {text!r}") from exc
