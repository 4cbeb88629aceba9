"""Typed input and output topics of a `TopologyTestDriver` (Kafka's `TestInputTopic`/`TestOutputTopic`).

They only convert between Python objects and bytes with the serdes given; the driver does the rest.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from streamlet.serdes import BytesSerde, Serde, SerdeLike, resolve_serde


class RawTopics(Protocol):
    """The byte-level side of the driver that typed topics call."""

    def pipe_raw(self, topic: str, key: bytes | None, value: bytes | None, timestamp: int) -> None: ...

    def read_raw(self, topic: str) -> tuple[bytes | None, bytes | None, int | None]: ...

    def queue_size(self, topic: str) -> int: ...


@dataclass(frozen=True, slots=True)
class TestRecord:
    """An output record: deserialized key and value, and its timestamp."""

    __test__: ClassVar[bool] = False  # not a pytest class

    key: Any
    value: Any
    timestamp: int | None  # None: written without one (a suppression buffer's changelog)


def _serde(serde: SerdeLike) -> Serde:
    return resolve_serde(serde, BytesSerde()) or BytesSerde()


class TestInputTopic:
    """Pipes records into one source topic. Records without a timestamp get the topic's clock, which then
    moves on by `auto_advance_ms` (Kafka's `TestInputTopic` with a start timestamp and auto-advance)."""

    __test__ = False  # not a pytest class

    def __init__(
        self,
        driver: RawTopics,
        topic: str,
        key_serde: SerdeLike,
        value_serde: SerdeLike,
        start_timestamp_ms: int,
        auto_advance_ms: int,
    ) -> None:
        if auto_advance_ms < 0:
            raise ValueError(f"auto_advance_ms must be >= 0, got {auto_advance_ms}")
        self._driver = driver
        self.topic = topic
        self._key_serde = _serde(key_serde)
        self._value_serde = _serde(value_serde)
        self._current_time = start_timestamp_ms
        self._advance = auto_advance_ms

    def pipe_input(self, key: Any, value: Any, timestamp: int | None = None) -> None:
        """Send one record and process everything it causes (repartitions included), as Kafka's driver does."""
        if timestamp is None:
            timestamp = self._current_time
            self._current_time += self._advance
        key_bytes = self._key_serde.serialize(self.topic, key)
        value_bytes = self._value_serde.serialize(self.topic, value)
        self._driver.pipe_raw(self.topic, key_bytes, value_bytes, timestamp)

    def pipe_key_value_list(self, pairs: Iterable[tuple[Any, Any]]) -> None:
        for key, value in pairs:
            self.pipe_input(key, value)

    def advance_time(self, ms: int) -> None:
        """Move the topic's clock for records piped without a timestamp."""
        if ms < 0:
            raise ValueError(f"advance must be >= 0, got {ms}")
        self._current_time += ms


class TestOutputTopic:
    """Reads (and consumes) what the topology wrote to one topic, in the order it was written."""

    __test__ = False

    def __init__(self, driver: RawTopics, topic: str, key_serde: SerdeLike, value_serde: SerdeLike) -> None:
        self._driver = driver
        self.topic = topic
        self._key_serde = _serde(key_serde)
        self._value_serde = _serde(value_serde)

    def read_record(self) -> TestRecord:
        """The oldest unread record; LookupError if there is none (Kafka: NoSuchElementException)."""
        key, value, timestamp = self._driver.read_raw(self.topic)
        return TestRecord(
            self._key_serde.deserialize(self.topic, key), self._value_serde.deserialize(self.topic, value), timestamp
        )

    def read_key_value(self) -> tuple[Any, Any]:
        record = self.read_record()
        return record.key, record.value

    def read_value(self) -> Any:
        return self.read_record().value

    def read_records_to_list(self) -> list[TestRecord]:
        return [self.read_record() for _ in range(self.queue_size)]

    def read_key_values_to_list(self) -> list[tuple[Any, Any]]:
        return [(r.key, r.value) for r in self.read_records_to_list()]

    def read_key_values_to_map(self) -> dict[Any, Any]:
        """The latest value per key (a None value removes the key), like Kafka's `readKeyValuesToMap`."""
        result: dict[Any, Any] = {}
        for key, value in self.read_key_values_to_list():
            if value is None:
                result.pop(key, None)
            else:
                result[key] = value
        return result

    @property
    def queue_size(self) -> int:
        return self._driver.queue_size(self.topic)

    def is_empty(self) -> bool:
        return self.queue_size == 0
