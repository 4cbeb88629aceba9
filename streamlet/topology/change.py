"""A KTable update (Kafka Streams' `Change`) and the serde that carries it through a repartition topic.

A grouped table's repartition topic (`KTable#groupBy`) carries each update's old and new value, so that the
aggregation can subtract the one and add the other. The bytes are Kafka Streams 4.x's `ChangedSerializer`'s,
so a streamlet and a Kafka Streams application read each other's topics:

* `{old}{0}`: only an old value (the row left the group);
* `{new}{1}`: only a new value;
* `{zigzag varint len(new)}{new}{old}{2}`: both (the row's group did not change, KIP-904).

The deserializer also reads flags 3 to 5 (the same with an `isLatest` byte before the flag), which Kafka
writes for versioned tables; streamlet ignores that byte, as it has no versioned stores.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from streamlet.errors import SerializationError
from streamlet.serdes import Serde


class Change(NamedTuple):
    """A table update: the new value (None = deleted) and, if sent, the old one."""

    new: Any
    old: Any


def _write_varint(value: int) -> bytes:
    """Kafka's `ByteUtils.writeVarint`: zigzag, then 7 bits per byte, low first."""
    n = ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _read_varint(data: bytes) -> tuple[int, int]:
    """(value, bytes read) of a zigzag varint at the start of `data`."""
    n = shift = 0
    for i, byte in enumerate(data[:5]):
        n |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (n >> 1) ^ -(n & 1), i + 1
        shift += 7
    raise SerializationError("ChangedDeserializer: malformed varint length")


class ChangeSerde:
    """Kafka's `ChangedSerializer` / `ChangedDeserializer` around the values' own serde."""

    __slots__ = ("inner",)

    def __init__(self, inner: Serde) -> None:
        self.inner = inner

    def serialize(self, topic: str, obj: Any) -> bytes | None:
        if not isinstance(obj, Change):
            raise SerializationError(f"ChangeSerde writes Change values, got {type(obj).__name__}")
        new = None if obj.new is None else self.inner.serialize(topic, obj.new)
        old = None if obj.old is None else self.inner.serialize(topic, obj.old)
        if new is not None and old is not None:
            return _write_varint(len(new)) + new + old + b"\x02"
        if new is not None:
            return new + b"\x01"
        if old is not None:
            return old + b"\x00"
        raise SerializationError("Both old and new values are null in ChangeSerializer, which is not allowed.")

    def deserialize(self, topic: str, data: bytes | None) -> Any:
        if not data:
            raise SerializationError(f"ChangedDeserializer: no data on {topic}")
        flag = data[-1]
        if flag > 5:
            raise SerializationError(
                f"Encountered unknown byte value `{flag}` for encodingFlag in ChangedDeserializer."
            )
        body = data[:-1] if flag < 3 else data[:-2]  # flags 3-5 carry an isLatest byte before the flag
        kind = flag % 3
        if kind == 0:
            return Change(None, self.inner.deserialize(topic, body))
        if kind == 1:
            return Change(self.inner.deserialize(topic, body), None)
        length, start = _read_varint(body)
        end = start + length
        return Change(self.inner.deserialize(topic, body[start:end]), self.inner.deserialize(topic, body[end:]))

    def __repr__(self) -> str:
        return f"ChangeSerde({self.inner!r})"
