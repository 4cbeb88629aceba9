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

import json
import struct
from typing import Any, Protocol, runtime_checkable

from streamlet.errors import SerializationError

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


def _type_name(obj: object) -> str:
    return type(obj).__name__


class BytesSerde:
    """Bytes in, bytes out (Kafka's ByteArraySerde). The default serde wherever none is given."""

    __slots__ = ()

    def serialize(self, topic: str, obj: Any) -> bytes | None:
        if obj is None or type(obj) is bytes:
            return obj
        if isinstance(obj, bytes | bytearray | memoryview):
            return bytes(obj)
        raise SerializationError(
            f"BytesSerde cannot serialize a {_type_name(obj)} for topic {topic!r}: it only takes bytes "
            "(bytes is the default serde; pass key_serde=/value_serde=, e.g. 'str', 'int64' or 'json')"
        )

    def deserialize(self, topic: str, data: bytes | None) -> Any:
        return data

    def __repr__(self) -> str:
        return "BytesSerde()"


class StringSerde:
    """UTF-8 text (Kafka's StringSerde). Invalid UTF-8 is an error, not silently replaced."""

    __slots__ = ()

    def serialize(self, topic: str, obj: Any) -> bytes | None:
        if type(obj) is str or (obj is not None and isinstance(obj, str)):
            try:
                return obj.encode()
            except UnicodeEncodeError as exc:
                raise SerializationError(f"StringSerde cannot encode a string for topic {topic!r}: {exc}") from exc
        if obj is None:
            return None
        raise SerializationError(f"StringSerde cannot serialize a {_type_name(obj)} for topic {topic!r}")

    def deserialize(self, topic: str, data: bytes | None) -> Any:
        if data is None:
            return None
        try:
            return data.decode() if type(data) is bytes else str(data, "utf-8")
        except (UnicodeDecodeError, TypeError) as exc:
            raise SerializationError(f"StringSerde cannot decode data from topic {topic!r}: {exc}") from exc

    def __repr__(self) -> str:
        return "StringSerde()"


_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_pack_int64 = _INT64.pack
_unpack_int64 = _INT64.unpack
_pack_int32 = _INT32.pack
_unpack_int32 = _INT32.unpack


def _int_error(serde: object, topic: str, obj: object, bits: int) -> SerializationError:
    if isinstance(obj, int):
        return SerializationError(
            f"{type(serde).__name__}: {obj} is out of the signed {bits}-bit range (topic {topic!r})"
        )
    return SerializationError(
        f"{type(serde).__name__} cannot serialize a {_type_name(obj)} for topic {topic!r}: it takes int"
    )


def _wrong_size(java_name: str, size: int, topic: str, data: object) -> SerializationError:
    try:
        got: object = len(data)  # type: ignore[arg-type]
    except TypeError:
        got = f"a {_type_name(data)}, not"
    return SerializationError(
        f"Size of data received by {java_name} is not {size} (got {got} bytes from topic {topic!r})"
    )


class LongSerde:
    """Signed 64-bit integers as 8 big-endian bytes: exactly Kafka's LongSerializer/LongDeserializer."""

    __slots__ = ()

    def serialize(self, topic: str, obj: Any) -> bytes | None:
        if obj is None:
            return None
        try:
            return _pack_int64(obj)  # any int (bool and other __index__ types included)
        except struct.error as exc:
            raise _int_error(self, topic, obj, 64) from exc

    def deserialize(self, topic: str, data: bytes | None) -> Any:
        if data is None:
            return None
        try:
            return _unpack_int64(data)[0]
        except (struct.error, TypeError) as exc:
            raise _wrong_size("LongDeserializer", 8, topic, data) from exc

    def __repr__(self) -> str:
        return "LongSerde()"


class IntegerSerde:
    """Signed 32-bit integers as 4 big-endian bytes: exactly Kafka's IntegerSerializer/Deserializer."""

    __slots__ = ()

    def serialize(self, topic: str, obj: Any) -> bytes | None:
        if obj is None:
            return None
        try:
            return _pack_int32(obj)  # any int (bool and other __index__ types included)
        except struct.error as exc:
            raise _int_error(self, topic, obj, 32) from exc

    def deserialize(self, topic: str, data: bytes | None) -> Any:
        if data is None:
            return None
        try:
            return _unpack_int32(data)[0]
        except (struct.error, TypeError) as exc:
            raise _wrong_size("IntegerDeserializer", 4, topic, data) from exc

    def __repr__(self) -> str:
        return "IntegerSerde()"


class JsonSerde:
    """Any JSON-compatible value as compact UTF-8 JSON."""

    __slots__ = ()

    def serialize(self, topic: str, obj: Any) -> bytes | None:
        if obj is None:
            return None
        try:
            return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        except (TypeError, ValueError) as exc:
            raise SerializationError(
                f"JsonSerde cannot serialize a {_type_name(obj)} for topic {topic!r}: {exc}"
            ) from exc

    def deserialize(self, topic: str, data: bytes | None) -> Any:
        if data is None:
            return None
        try:
            return json.loads(data)
        except (ValueError, TypeError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            raise SerializationError(f"JsonSerde cannot decode data from topic {topic!r}: {exc}") from exc

    def __repr__(self) -> str:
        return "JsonSerde()"


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
