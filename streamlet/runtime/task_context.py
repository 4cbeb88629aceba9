"""What a task's processor graph and the layers above it share, without the graph itself: the `TaskContext`
the runtime gives a task, the store protocol processors use, and the errors a record can fail with.

A small module of its own so that agents, tables and channels (which only need the context's protocol)
do not import the processor graph, and the processor graph does not import them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from streamlet.errors import SerializationError, StreamletError
from streamlet.runtime.partitioner import DeferredPartition
from streamlet.task_id import TaskId

__all__ = [
    "FlushListener",
    "InvalidTimestampError",
    "RecordDeserializationError",
    "RecordProcessingError",
    "Stamper",
    "StateStore",
    "TaskContext",
]

#: `listener(key, new_value, old_value[, timestamp])`: all bytes as stored; `new_value` None = deleted.
#: A store that tracks the timestamp of the cached entry may pass it; otherwise the current record's is used.
FlushListener = Callable[..., None]

#: (partition, offset, record timestamp, key bytes, value bytes) -> the timestamp the source will extract
Stamper = Callable[[int, int, int, "bytes | None", "bytes | None"], int]


@runtime_checkable
class StateStore(Protocol):
    """What processor nodes need from a key-value store (bytes in, bytes out)."""

    def get(self, key: bytes) -> bytes | None: ...

    def put(self, key: bytes, value: bytes | None) -> None: ...

    def delete(self, key: bytes) -> bytes | None: ...

    def set_flush_listener(self, listener: FlushListener) -> None: ...


@runtime_checkable
class TaskContext(Protocol):
    """What the runtime gives a task's processor graph."""

    task_id: TaskId

    def get_state_store(self, name: str) -> StateStore: ...

    def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        timestamp: int,
        partition: int | DeferredPartition | None = None,
    ) -> None:
        """Produce a record; partition None = the producer's default (murmur2 of the key), a `DeferredPartition`
        is chosen with the topic's partition count."""
        ...


class RecordProcessingError(StreamletError):
    """User code, or a sink's serde, or the producer's size limit, failed on one record.

    `node` is the processor that raised; `production` is True when the record's output could not be written
    (a sink serde or a record too large to send), which goes to the production exception handler rather
    than the processing one.
    """

    def __init__(self, message: str, node: str | None, cause: BaseException, *, production: bool) -> None:
        super().__init__(message)
        self.node = node
        self.cause = cause
        self.production = production


class RecordDeserializationError(SerializationError):
    """A source record could not be deserialized (what `deserialization_exception_handler` handles)."""

    def __init__(self, message: str, topic: str, partition: int, offset: int, node: str | None = None) -> None:
        super().__init__(message)
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.node = node  # the source node that read it


class InvalidTimestampError(RecordDeserializationError):
    """A record has a negative timestamp and no `timestamp_extractor` says what to use instead. It goes to the
    deserialization handler, whose default (`fail`) stops the task as Kafka's `FailOnInvalidTimestamp` does,
    while `log_and_continue` / `dead_letter` skip it like any record the task cannot read."""
