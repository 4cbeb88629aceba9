"""Serdes: byte layouts of Kafka's built-in serdes, null pass-through, and errors."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from streamlet.errors import SerializationError
from streamlet.serdes import (
    BytesSerde,
    IntegerSerde,
    JsonSerde,
    LongSerde,
    Serde,
    StringSerde,
    resolve_serde,
    serde_from_name,
)

ALL = [BytesSerde(), StringSerde(), LongSerde(), IntegerSerde(), JsonSerde()]


@pytest.mark.parametrize("serde", ALL, ids=repr)
def test_none_passes_through_both_ways(serde: Serde) -> None:
    # Kafka's serializers return null for null and deserializers return null for null data.
    assert serde.serialize("t", None) is None
    assert serde.deserialize("t", None) is None


@pytest.mark.parametrize("serde", ALL, ids=repr)
def test_is_a_serde(serde: Serde) -> None:
    assert isinstance(serde, Serde)


def test_long_serde_byte_layout_is_kafkas() -> None:
    # Kafka's LongSerializer: 8 bytes, big-endian two's complement (ByteBuffer.putLong).
    serde = LongSerde()
    assert serde.serialize("t", 1) == b"\x00" * 7 + b"\x01"
    assert serde.serialize("t", 0) == b"\x00" * 8
    assert serde.serialize("t", -1) == b"\xff" * 8
    assert serde.serialize("t", 256) == b"\x00" * 6 + b"\x01\x00"
    assert serde.serialize("t", 2**63 - 1) == b"\x7f" + b"\xff" * 7
    assert serde.serialize("t", -(2**63)) == b"\x80" + b"\x00" * 7
    for value in (0, 1, -1, 42, 2**40 + 7, 2**63 - 1, -(2**63)):
        assert serde.deserialize("t", serde.serialize("t", value)) == value
    assert serde.deserialize("t", b"\x00\x00\x00\x00\x00\x00\x01\x02") == 258


def test_long_serde_wrong_size_names_the_size() -> None:
    serde = LongSerde()
    with pytest.raises(SerializationError, match=r"LongDeserializer is not 8 \(got 3 bytes") as info:
        serde.deserialize("counts", b"\x00\x01\x02")
    assert isinstance(info.value.__cause__, struct.error)
    with pytest.raises(SerializationError, match="is not 8 .got 9"):
        serde.deserialize("counts", b"\x00" * 9)


def test_long_serde_rejects_out_of_range_and_non_ints() -> None:
    serde = LongSerde()
    with pytest.raises(SerializationError, match="64-bit range") as info:
        serde.serialize("t", 2**63)
    assert info.value.__cause__ is not None
    for bad in ("1", 1.0, b"\x01", [1]):
        with pytest.raises(SerializationError, match="takes int"):
            serde.serialize("t", bad)
    assert serde.serialize("t", True) == serde.serialize("t", 1)  # a Python bool is an int


def test_integer_serde_byte_layout_and_errors() -> None:
    serde = IntegerSerde()
    assert serde.serialize("t", 1) == b"\x00\x00\x00\x01"
    assert serde.serialize("t", -2) == b"\xff\xff\xff\xfe"
    assert serde.deserialize("t", b"\x7f\xff\xff\xff") == 2**31 - 1
    with pytest.raises(SerializationError, match="IntegerDeserializer is not 4"):
        serde.deserialize("t", b"\x00" * 8)
    with pytest.raises(SerializationError, match="32-bit range"):
        serde.serialize("t", 2**31)


def test_string_serde_is_utf8() -> None:
    serde = StringSerde()
    assert serde.serialize("t", "héllo ✓") == "héllo ✓".encode()
    assert serde.deserialize("t", "héllo ✓".encode()) == "héllo ✓"
    assert serde.deserialize("t", bytearray(b"abc")) == "abc"
    assert serde.serialize("t", "") == b""


def test_string_serde_errors_carry_the_cause() -> None:
    serde = StringSerde()
    with pytest.raises(SerializationError, match="cannot decode data from topic 'in'") as info:
        serde.deserialize("in", b"\xff\xfe")
    assert isinstance(info.value.__cause__, UnicodeDecodeError)
    with pytest.raises(SerializationError, match="cannot serialize a int"):
        serde.serialize("t", 5)
    with pytest.raises(SerializationError, match="cannot encode"):
        serde.serialize("t", "\ud800")  # lone surrogate


def test_bytes_serde() -> None:
    serde = BytesSerde()
    assert serde.serialize("t", b"\x00\x01") == b"\x00\x01"
    assert serde.serialize("t", bytearray(b"ab")) == b"ab"
    assert serde.deserialize("t", b"xy") == b"xy"
    with pytest.raises(SerializationError, match="only takes bytes"):
        serde.serialize("t", "text")


def test_json_serde_round_trip_and_errors() -> None:
    serde = JsonSerde()
    value = {"word": "héllo", "counts": [1, 2], "ok": True, "none": None}
    data = serde.serialize("t", value)
    assert data == '{"word":"héllo","counts":[1,2],"ok":true,"none":null}'.encode()
    assert serde.deserialize("t", data) == value
    with pytest.raises(SerializationError) as info:
        serde.serialize("t", {1, 2})
    assert isinstance(info.value.__cause__, TypeError)
    with pytest.raises(SerializationError, match="cannot decode"):
        serde.deserialize("t", b"{not json")
    with pytest.raises(SerializationError, match="cannot decode"):
        serde.deserialize("t", b"\xff")


def test_json_serde_never_unpickles() -> None:
    import pickle

    with pytest.raises(SerializationError):
        JsonSerde().deserialize("t", pickle.dumps({"a": 1}))


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("str", StringSerde),
        ("bytes", BytesSerde),
        ("int64", LongSerde),
        ("long", LongSerde),
        ("int32", IntegerSerde),
        ("json", JsonSerde),
    ],
)
def test_serde_from_name(name: str, cls: type) -> None:
    assert isinstance(serde_from_name(name), cls)


def test_serde_from_unknown_name() -> None:
    with pytest.raises(ValueError, match="unknown serde 'float'"):
        serde_from_name("float")


def test_resolve_serde() -> None:
    long_serde = LongSerde()
    assert resolve_serde(long_serde) is long_serde
    assert isinstance(resolve_serde("str"), StringSerde)
    assert resolve_serde(None) is None
    with pytest.raises(TypeError, match="expected a serde"):
        resolve_serde(42)  # type: ignore[arg-type]


def test_a_built_in_serde_can_be_extended() -> None:
    """The built-ins are compiled classes (streamlet/kafka/serialization.py) that Python classes may extend."""

    class Upper(StringSerde):
        def serialize(self, topic: str, obj: Any) -> bytes | None:
            return super().serialize(topic, None if obj is None else obj.upper())

    serde = Upper()
    assert serde.serialize("t", "word") == b"WORD"
    assert serde.deserialize("t", b"word") == "word"
    assert isinstance(serde, Serde)
