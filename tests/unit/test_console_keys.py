"""`streamlet consume --key-serde windowed:INNER|session:INNER`: windowed keys as key@[start,end)."""

from __future__ import annotations

import struct

import pytest

from streamlet.console_keys import console_key_serde, format_key, parse_duration_ms
from streamlet.errors import StreamletError


def test_a_time_windowed_key_prints_its_window_from_the_size() -> None:
    raw = b"alice" + struct.pack(">q", 120_000)  # Kafka's TimeWindowedSerializer: key bytes + 8-byte start
    serde = console_key_serde("windowed:str", "60s")
    assert format_key(serde.deserialize("t", raw)) == "alice@[120000,180000)"


def test_a_session_windowed_key_prints_both_ends() -> None:
    raw = b"bob" + struct.pack(">qq", 7_500, 1_000)  # Kafka's SessionWindowedSerializer: key + end + start
    serde = console_key_serde("session:str", None)
    assert format_key(serde.deserialize("t", raw)) == "bob@[1000,7500)"


def test_plain_keys_print_as_before() -> None:
    assert format_key(console_key_serde("str", None).deserialize("t", b"carol")) == "carol"
    assert format_key(console_key_serde("int64", None).deserialize("t", struct.pack(">q", 42))) == "42"


@pytest.mark.parametrize(("text", "ms"), [("60000", 60_000), ("250ms", 250), ("60s", 60_000), ("5m", 300_000)])
def test_window_sizes(text: str, ms: int) -> None:
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize(
    ("spec", "size", "message"),
    [
        ("windowed:str", None, "give --window-size"),
        ("session:str", "60s", "carries its end; drop --window-size"),
        ("str", "60s", "--window-size goes with --key-serde windowed:INNER"),
        ("windowed:utf9", "60s", "unknown serde 'utf9'"),
        ("windowed:str", "soon", "expected a positive duration"),
    ],
)
def test_mistakes_are_named(spec: str, size: str | None, message: str) -> None:
    with pytest.raises(StreamletError, match=message):
        console_key_serde(spec, size)
