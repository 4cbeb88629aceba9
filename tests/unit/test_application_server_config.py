"""`application_server` is checked when the config is built, as Kafka Streams 4.4.0 checks `application.server`
(KIP-1245). The expected answers were recorded from the 4.4.0 jar (`tests/oracle/config` compares a larger
corpus with the jar itself)."""

from __future__ import annotations

import pytest

from streamlet.config import StreamsConfig
from streamlet.errors import ConfigError


def _server(value: object) -> str:
    return StreamsConfig(application_id="app", application_server=value).application_server  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "kept"),
    [
        ("w1.example.com:6066", "w1.example.com:6066"),
        ("10.0.0.1:6066", "10.0.0.1:6066"),
        ("[::1]:8080", "[::1]:8080"),
        ("::1:8080", "::1:8080"),
        ("localhost:0", "localhost:0"),
        ("localhost:65536", "localhost:65536"),  # Kafka checks no port range
        ("localhost:2147483647", "localhost:2147483647"),
        ("localhost:0008080", "localhost:0008080"),
        ("host:1:2", "host:1:2"),  # the host takes the first colons
        (" localhost:8080\t", "localhost:8080"),  # ConfigDef trims a string value
        ("", ""),
        ("  \n", ""),  # blank: no application server
        ("\x01", ""),  # Java's trim drops every char up to U+0020
    ],
)
def test_kafka_accepts_it_and_so_does_streamlet(value: str, kept: str) -> None:
    assert _server(value) == kept


@pytest.mark.parametrize(
    "value",
    [
        "localhost",
        "localhost:",
        ":8080",
        "localhost:http",
        "localhost:-1",
        "localhost:1a",
        "localhost:2147483648",  # Integer.parseInt overflows
        "local host:8080",
        "h\u00e9:1",
        "a@b:1",
        "localhost:8080/path",
        "[::1]",
        "\u00a0",  # not blank to Java's trim
    ],
)
def test_kafka_refuses_it_and_streamlet_gives_kafkas_message(value: str) -> None:
    with pytest.raises(ConfigError) as raised:
        _server(value)
    assert str(raised.value) == (
        f"Invalid value {value} for configuration application_server: Error parsing host address {value}. "
        "Expected format host:port."
    )


def test_a_protocol_kafka_would_drop_is_refused_with_the_reason() -> None:
    with pytest.raises(ConfigError, match=r"application_server='http://w1:6066': give host:port without a protocol"):
        _server("http://w1:6066")
    with pytest.raises(ConfigError, match="Error parsing host address http://:1"):  # Kafka refuses this one too
        _server("http://:1")


def test_not_a_string() -> None:
    with pytest.raises(ConfigError, match="application_server must be a string, got 6066"):
        _server(6066)


def test_the_web_port_default_passes_the_check() -> None:
    config = StreamsConfig(application_id="app", web_port=6066, web_host="0.0.0.0")
    assert config.application_server == "0.0.0.0:6066"
