"""Kafka's built-in serdes, byte for byte (`org.apache.kafka.common.serialization`): the per-record code of
`streamlet.serdes`, compiled with mypyc where the install can (`streamlet/_compiled.py`).

Import them from `streamlet.serdes`, the public face, which also holds the `Serde` protocol: a `runtime_checkable`
Protocol cannot live in a compiled module. Users may subclass these classes (`allow_interpreted_subclasses`).
Parameters are `Any`: a compiled method checks its argument types, and these take what the Python ones always
took (a bytearray to decode, any topic).
"""

from __future__ import annotations

import json
import struct
from typing import Any

from mypy_extensions import mypyc_attr

from streamlet.errors import SerializationError


def _caused(error: SerializationError, cause: BaseException) -> SerializationError:
    """`error` with `cause` as its `__cause__`: mypyc ignores `raise ... from cause` (tests/unit/test_compiled.py)."""
    error.__cause__ = cause
    return error


def _type_name(obj: object) -> str:
    return type(obj).__name__


@mypyc_attr(allow_interpreted_subclasses=True)  # users may extend a built-in
class BytesSerde:
    """Bytes in, bytes out (Kafka's ByteArraySerde). The default serde wherever none is given."""

    __slots__ = ()

    def serialize(self, topic: Any, obj: Any) -> bytes | None:
        if obj is None or type(obj) is bytes:
            return obj
        if isinstance(obj, bytes | bytearray | memoryview):
            return bytes(obj)
        raise SerializationError(
            f"BytesSerde cannot serialize a {_type_name(obj)} for topic {topic!r}: it only takes bytes "
            "(bytes is the default serde; pass key_serde=/value_serde=, e.g. 'str', 'int64' or 'json')"
        )

    def deserialize(self, topic: Any, data: Any) -> Any:
        return data

    def __repr__(self) -> str:
        return "BytesSerde()"


@mypyc_attr(allow_interpreted_subclasses=True)  # users may extend a built-in
class StringSerde:
    """UTF-8 text (Kafka's StringSerde). Invalid UTF-8 is an error, not silently replaced."""

    __slots__ = ()

    def serialize(self, topic: Any, obj: Any) -> bytes | None:
        if type(obj) is str or (obj is not None and isinstance(obj, str)):
            try:
                return obj.encode()
            except UnicodeEncodeError as exc:
                error = SerializationError(f"StringSerde cannot encode a string for topic {topic!r}: {exc}")
                raise _caused(error, exc)  # noqa: B904 (its cause is set)
        if obj is None:
            return None
        raise SerializationError(f"StringSerde cannot serialize a {_type_name(obj)} for topic {topic!r}")

    def deserialize(self, topic: Any, data: Any) -> Any:
        if data is None:
            return None
        try:
            return data.decode() if type(data) is bytes else str(data, "utf-8")
        except (UnicodeDecodeError, TypeError) as exc:
            error = SerializationError(f"StringSerde cannot decode data from topic {topic!r}: {exc}")
            raise _caused(error, exc)  # noqa: B904 (its cause is set)

    def __repr__(self) -> str:
        return "StringSerde()"


_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_pack_int64 = _INT64.pack
_unpack_int64 = _INT64.unpack
_pack_int32 = _INT32.pack
_unpack_int32 = _INT32.unpack


def _int_error(serde: object, topic: Any, obj: object, bits: int) -> SerializationError:
    if isinstance(obj, int):
        return SerializationError(
            f"{type(serde).__name__}: {obj} is out of the signed {bits}-bit range (topic {topic!r})"
        )
    return SerializationError(
        f"{type(serde).__name__} cannot serialize a {_type_name(obj)} for topic {topic!r}: it takes int"
    )


def _wrong_size(java_name: str, size: int, topic: Any, data: object) -> SerializationError:
    try:
        got: object = len(data)  # type: ignore[arg-type]
    except TypeError:
        got = f"a {_type_name(data)}, not"
    return SerializationError(
        f"Size of data received by {java_name} is not {size} (got {got} bytes from topic {topic!r})"
    )


@mypyc_attr(allow_interpreted_subclasses=True)  # users may extend a built-in
class LongSerde:
    """Signed 64-bit integers as 8 big-endian bytes: exactly Kafka's LongSerializer/LongDeserializer."""

    __slots__ = ()

    def serialize(self, topic: Any, obj: Any) -> bytes | None:
        if obj is None:
            return None
        try:
            return _pack_int64(obj)  # any int (bool and other __index__ types included)
        except struct.error as exc:
            error = _int_error(self, topic, obj, 64)
            raise _caused(error, exc)  # noqa: B904 (its cause is set)

    def deserialize(self, topic: Any, data: Any) -> Any:
        if data is None:
            return None
        try:
            return _unpack_int64(data)[0]
        except (struct.error, TypeError) as exc:
            error = _wrong_size("LongDeserializer", 8, topic, data)
            raise _caused(error, exc)  # noqa: B904 (its cause is set)

    def __repr__(self) -> str:
        return "LongSerde()"


@mypyc_attr(allow_interpreted_subclasses=True)  # users may extend a built-in
class IntegerSerde:
    """Signed 32-bit integers as 4 big-endian bytes: exactly Kafka's IntegerSerializer/Deserializer."""

    __slots__ = ()

    def serialize(self, topic: Any, obj: Any) -> bytes | None:
        if obj is None:
            return None
        try:
            return _pack_int32(obj)  # any int (bool and other __index__ types included)
        except struct.error as exc:
            error = _int_error(self, topic, obj, 32)
            raise _caused(error, exc)  # noqa: B904 (its cause is set)

    def deserialize(self, topic: Any, data: Any) -> Any:
        if data is None:
            return None
        try:
            return _unpack_int32(data)[0]
        except (struct.error, TypeError) as exc:
            error = _wrong_size("IntegerDeserializer", 4, topic, data)
            raise _caused(error, exc)  # noqa: B904 (its cause is set)

    def __repr__(self) -> str:
        return "IntegerSerde()"


@mypyc_attr(allow_interpreted_subclasses=True)  # users may extend a built-in
class JsonSerde:
    """Any JSON-compatible value as compact UTF-8 JSON."""

    __slots__ = ()

    def serialize(self, topic: Any, obj: Any) -> bytes | None:
        if obj is None:
            return None
        try:
            return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        except (TypeError, ValueError) as exc:
            error = SerializationError(f"JsonSerde cannot serialize a {_type_name(obj)} for topic {topic!r}: {exc}")
            raise _caused(error, exc)  # noqa: B904 (its cause is set)

    def deserialize(self, topic: Any, data: Any) -> Any:
        if data is None:
            return None
        try:
            return json.loads(data)
        except (ValueError, TypeError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            error = SerializationError(f"JsonSerde cannot decode data from topic {topic!r}: {exc}")
            raise _caused(error, exc)  # noqa: B904 (its cause is set)

    def __repr__(self) -> str:
        return "JsonSerde()"
