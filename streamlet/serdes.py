"""Serdes: turn keys and values into bytes and back, with Kafka's built-in serdes' byte layouts.

A serde is any object with `serialize(topic, obj) -> bytes | None` and
`deserialize(topic, data) -> obj`. As in Kafka, `None` (a null key or a tombstone value) passes through
both ways untouched. Every failure raises `SerializationError`, chained to the underlying cause.

Built-ins (names accepted by `serde_from_name` and by the DSL wherever a serde is expected):

======================  =============  ====================================================
name                    class          bytes
======================  =============  ====================================================
``"bytes"``             BytesSerde     unchanged (the default serde)
``"str"``               StringSerde    UTF-8 (Kafka's StringSerde)
``"int64"``/``"long"``  LongSerde      8 bytes, signed big-endian (Kafka's LongSerde)
``"int32"``             IntegerSerde   4 bytes, signed big-endian (Kafka's IntegerSerde)
``"json"``              JsonSerde      UTF-8 JSON (never pickle: data from Kafka is untrusted)
======================  =============  ====================================================
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from streamlet.kafka.serialization import BytesSerde, IntegerSerde, JsonSerde, LongSerde, StringSerde

__all__ = [
    "BytesSerde",
    "IntegerSerde",
    "JsonSerde",
    "LongSerde",
    "Serde",
    "SerdeLike",
    "StringSerde",
    "resolve_serde",
    "serde_from_name",
]


@runtime_checkable
class Serde(Protocol):
    """Converts one kind of object to bytes and back. `None` maps to `None` both ways."""

    def serialize(self, topic: str, obj: Any) -> bytes | None: ...

    def deserialize(self, topic: str, data: bytes | None) -> Any: ...


_BY_NAME: dict[str, type] = {
    "bytes": BytesSerde,
    "str": StringSerde,
    "string": StringSerde,
    "int64": LongSerde,
    "long": LongSerde,
    "int32": IntegerSerde,
    "int": IntegerSerde,
    "integer": IntegerSerde,
    "json": JsonSerde,
}

#: What the DSL accepts where a serde is expected: a serde, a built-in's name, or None (the default).
SerdeLike = Serde | str | None


def serde_from_name(name: str) -> Serde:
    """A built-in serde by name: "str", "bytes", "int64" (or "long"), "int32" or "json"."""
    try:
        cls = _BY_NAME[name.lower()] if isinstance(name, str) else None
    except KeyError:
        cls = None
    if cls is None:
        raise ValueError(f"unknown serde {name!r}; expected one of: str, bytes, int64, long, int32, json")
    return cls()


def resolve_serde(serde: SerdeLike, default: Serde | None = None) -> Serde | None:
    """`serde` as a Serde: names are looked up, None gives `default`; anything else must be a Serde."""
    if serde is None:
        return default
    if isinstance(serde, str):
        return serde_from_name(serde)
    if not (callable(getattr(serde, "serialize", None)) and callable(getattr(serde, "deserialize", None))):
        raise TypeError(f"expected a serde (an object with serialize/deserialize) or a serde name, got {serde!r}")
    return serde
