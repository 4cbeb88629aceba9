"""RecordContext: the metadata of the record a task is processing (Kafka Streams' ProcessorRecordContext).

There is exactly one per task. The processor graph sets it for each input record, and everything that needs
"the current record" reads the same object: sinks and changelog sinks take its timestamp, error messages
its topic, partition and offset. Two copies could disagree; one cannot.
"""

from __future__ import annotations

from collections.abc import Sequence


class RecordContext:
    """Mutable on purpose: it is overwritten for every record, on the hot path."""

    __slots__ = ("topic", "partition", "offset", "timestamp", "headers", "old_value", "delete_timestamps")

    def __init__(self) -> None:
        self.topic: str | None = None
        self.partition = -1
        self.offset = -1
        self.timestamp = -1
        self.headers: Sequence[tuple[str, bytes]] = ()  # the input record's (an agent's reply-to for `ask`)
        # while a table forwards an update: the serialized value it replaced (Kafka's `Change.oldValue`),
        # which a suppression buffer keeps; None otherwise
        self.old_value: bytes | None = None
        # deletes a table writes into its cache, (changelog topic, key) -> the delete's own timestamp: the store
        # keeps none, so its changelog sink and its flush listener read it here when the cache flushes (Kafka's
        # cache entries keep their record context)
        self.delete_timestamps: dict[tuple[str, bytes], int] = {}

    def where(self) -> str:
        """`topic-partition@offset`, as error messages name a record."""
        return f"{self.topic}-{self.partition}@{self.offset}"

    def __repr__(self) -> str:
        return f"RecordContext({self.where()}, timestamp={self.timestamp})"
