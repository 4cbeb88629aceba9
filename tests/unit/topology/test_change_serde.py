"""Kafka Streams 4.x's Change serde (ChangedSerializer / ChangedDeserializer), byte for byte."""

from __future__ import annotations

import pytest

from streamlet.errors import SerializationError
from streamlet.serdes import LongSerde, StringSerde
from streamlet.topology.change import Change, ChangeSerde

SERDE = ChangeSerde(StringSerde())


@pytest.mark.parametrize(
    ("change", "data"),
    [
        (Change(None, "banana"), b"banana\x00"),
        (Change("apple", None), b"apple\x01"),
        # zigzag varint of len("blueberry") = 9 is 0x12
        (Change("blueberry", "apple"), b"\x12blueberryapple\x02"),
        # an empty new value still has its length; a 100-byte one takes two varint bytes (200 = 0xc8 0x01)
        (Change("", "x"), b"\x00x\x02"),
        (Change("n" * 100, "o"), b"\xc8\x01" + b"n" * 100 + b"o\x02"),
    ],
)
def test_writes_and_reads_kafkas_format(change: Change, data: bytes) -> None:
    assert SERDE.serialize("t", change) == data
    assert SERDE.deserialize("t", data) == change


def test_reads_the_versioned_flags_with_their_is_latest_byte() -> None:
    assert SERDE.deserialize("t", b"old\x01\x03") == Change(None, "old")
    assert SERDE.deserialize("t", b"new\x00\x04") == Change("new", None)
    assert SERDE.deserialize("t", b"\x06newold\x01\x05") == Change("new", "old")


def test_wraps_any_value_serde() -> None:
    serde = ChangeSerde(LongSerde())
    data = serde.serialize("t", Change(3, 2))
    assert data == b"\x10" + (3).to_bytes(8, "big") + (2).to_bytes(8, "big") + b"\x02"
    assert serde.deserialize("t", data) == Change(3, 2)


def test_refuses_what_kafka_refuses() -> None:
    with pytest.raises(SerializationError, match="Both old and new values are null"):
        SERDE.serialize("t", Change(None, None))
    with pytest.raises(SerializationError, match="unknown byte value `6`"):
        SERDE.deserialize("t", b"x\x06")
