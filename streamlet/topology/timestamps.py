"""Record timestamps: what a source record's timestamp is (Kafka Streams' `TimestampExtractor`).

Every record a task processes has a timestamp, taken at its source node and carried along: sinks write it,
aggregations compute theirs from it, windows place records by it. By default it is the timestamp Kafka
stored with the record; a negative one means the producer sent none, and the record goes to the
deserialization handler (its default, `fail`, stops the task as Kafka's `FailOnInvalidTimestamp` does). A
`timestamp_extractor` config replaces that with `extractor(record, partition_time)`, where `record` is
the deserialized source record and `partition_time` the largest timestamp extracted so far on its partition
(-1 before the first); a negative result drops the record, as Kafka's `RecordQueue` does. Records
of repartition topics always keep the timestamp they were written with: Kafka gives repartition sources
`FailOnInvalidTimestamp`, whatever the configured extractor.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, NamedTuple

from streamlet.errors import ConfigError

#: The partition time before any record of the partition was seen (Kafka's `RecordQueue.UNKNOWN`).
UNKNOWN = -1


class ConsumedRecord(NamedTuple):
    """A source record as an extractor sees it: key and value already deserialized."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: Any
    value: Any


TimestampExtractor = Callable[[ConsumedRecord, int], int]


def resolve_extractor(value: object) -> TimestampExtractor | None:
    """A callable as given, a `"module:function"` string imported, or None for the record's own timestamp."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        module, _, attr = value.partition(":")
        if not module or not attr:
            raise ConfigError(f"timestamp_extractor={value!r}: expected a callable or 'module:function'")
        try:
            value = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"timestamp_extractor={value!r}: cannot import it: {exc}") from exc
    if not callable(value):
        raise ConfigError(f"timestamp_extractor must be callable (record, partition_time) -> int, got {value!r}")
    return value  # type: ignore[return-value]
