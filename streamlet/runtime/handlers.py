"""Exception handlers: what a stream thread does with a record it cannot handle.

Kafka Streams has three, one per stage, and streamlet has the same three configs:

* `deserialization_exception_handler`: a source serde cannot decode the record;
* `processing_exception_handler` (KIP-1033): user code (a processor, an agent body) raises on it;
* `production_exception_handler`: its output cannot be written (a sink serde fails, or the record is larger
  than the producer may send).

Each is `fail` (stop, naming the task, processor, topic, partition and offset), skip (`log_and_continue`, or
`continue` for production, as in Kafka Streams), or `dead_letter`: the raw input record goes to
`dead_letter_topic` with Kafka Streams' KIP-1034 headers saying what failed where. One handler of each kind
per thread, shared by its tasks (and the TopologyTestDriver's, for processing and production).

A record a store's cache flushes downstream is no input record: its handler gets the record context of the
flush (`flushed_record`), without a raw key and value, and its dead letter is its headers.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Sequence
from typing import Any, Protocol

from aiokafka.structs import ConsumerRecord

from streamlet.errors import DeserializationFailure, ProcessingFailure, ProductionFailure, StreamsFailure
from streamlet.runtime.dropped_records import PROCESSING_ERROR, PRODUCTION_ERROR, DroppedRecords
from streamlet.runtime.record_context import RecordContext
from streamlet.runtime.task_context import RecordProcessingError
from streamlet.task_id import TaskId

log = logging.getLogger("streamlet.task")

DESERIALIZATION = "deserialization"
PROCESSING = "processing"
PRODUCTION = "production"

_FAILURES: dict[str, type[StreamsFailure]] = {
    DESERIALIZATION: DeserializationFailure,
    PROCESSING: ProcessingFailure,
    PRODUCTION: ProductionFailure,
}
_SKIP_MODE = {DESERIALIZATION: "log_and_continue", PROCESSING: "log_and_continue", PRODUCTION: "continue"}


class DeadLetterSink(Protocol):
    """Where dead letters go: a thread's `RecordCollector`, or the TopologyTestDriver's output topics."""

    def send_dead_letter(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        timestamp: int | None,
        headers: Sequence[tuple[str, bytes]],
    ) -> None: ...


def flushed_record(context: RecordContext) -> ConsumerRecord[Any, Any]:
    """What a handler gets for a record a store's cache flushed: the task's record context at the flush (its
    last input record's position; Kafka gives the one that last wrote the cached entry, which streamlet's
    cache does not keep, as that would cost on every write), and no raw key or value."""
    topic, headers = context.topic or "", tuple(context.headers)
    return ConsumerRecord(
        topic, context.partition, context.offset, context.timestamp, 0, None, None, None, -1, -1, headers
    )


def dead_letter_headers(
    record: ConsumerRecord[Any, Any], exc: BaseException, task_id: TaskId, node: str | None
) -> list[tuple[str, bytes]]:
    """Kafka Streams' dead-letter headers (KIP-1034), plus the task and processor."""
    return [
        ("__streams.errors.exception", type(exc).__qualname__.encode()),
        ("__streams.errors.message", str(exc).encode(errors="replace")),
        ("__streams.errors.stacktrace", "".join(traceback.format_exception(exc)).encode(errors="replace")),
        ("__streams.errors.topic", record.topic.encode()),
        ("__streams.errors.partition", str(record.partition).encode()),
        ("__streams.errors.offset", str(record.offset).encode()),
        ("__streamlet.errors.task", str(task_id).encode()),
        ("__streamlet.errors.processor", (node or "").encode()),
    ]


class ExceptionHandler:
    """One of the three handlers of a thread, with its mode (checked by StreamsConfig)."""

    def __init__(self, kind: str, mode: str, collector: DeadLetterSink, dead_letter_topic: str = "") -> None:
        self.kind = kind
        self.mode = mode
        self.collector = collector
        self.dead_letter_topic = dead_letter_topic
        self.skipped = 0  # metric: records skipped or sent to the dead-letter topic

    def handle(
        self, task_id: TaskId, record: ConsumerRecord[Any, Any], exc: BaseException, node: str | None = None
    ) -> None:
        """Raise the stage's failure (mode `fail`), or count, log and skip the record (and maybe dead-letter it)."""
        where = f"topic {record.topic} partition {record.partition} offset {record.offset}"
        what = self._describe(task_id, where, exc, node)
        if self.mode == "fail":
            skip = _SKIP_MODE[self.kind]
            raise _FAILURES[self.kind](
                f"{what}. Processing stops ({self.kind}_exception_handler='fail'); "
                f"use '{skip}' or 'dead_letter' to skip such records"
            ) from exc
        self.skipped += 1
        if self.mode == "dead_letter":
            log.warning("%s; sent to %s", what, self.dead_letter_topic)
            key, value = record.key, record.value
            if key is None and value is None:  # a flushed record (no raw one): only its headers, which say it all
                value = b""  # the producer refuses a record with neither key nor value
            self.collector.send_dead_letter(
                self.dead_letter_topic, key, value, record.timestamp, dead_letter_headers(record, exc, task_id, node)
            )
        else:
            log.warning("%s; skipped", what)

    def _describe(self, task_id: TaskId, where: str, exc: BaseException, node: str | None) -> str:
        if self.kind == DESERIALIZATION:
            return f"task {task_id}: cannot deserialize the record at {where}: {exc}"
        if self.kind == PROCESSING:
            return f"task {task_id}: processor {node} raised {exc!r} on the record at {where}"
        return f"task {task_id}: the output of processor {node} for the record at {where} cannot be written: {exc}"


class ThreadHandlers:
    """The three handlers of one thread."""

    def __init__(
        self,
        collector: DeadLetterSink,
        *,
        deserialization: str = "fail",
        processing: str = "fail",
        production: str = "fail",
        dead_letter_topic: str = "",
    ) -> None:
        self.deserialization = ExceptionHandler(DESERIALIZATION, deserialization, collector, dead_letter_topic)
        self.processing = ExceptionHandler(PROCESSING, processing, collector, dead_letter_topic)
        self.production = ExceptionHandler(PRODUCTION, production, collector, dead_letter_topic)

    def record_failed(
        self, task_id: TaskId, record: ConsumerRecord[Any, Any], exc: RecordProcessingError, dropped: DroppedRecords
    ) -> None:
        """Hand a record a node failed on to the processing (or production) handler, which raises if it says
        fail; otherwise the record was dropped (Kafka's dropped-records sensor of the task)."""
        handler = self.production if exc.production else self.processing
        handler.handle(task_id, record, exc.cause, exc.node)
        dropped.record(exc.node or record.topic, PRODUCTION_ERROR if exc.production else PROCESSING_ERROR)
