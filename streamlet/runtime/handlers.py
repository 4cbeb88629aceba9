"""Exception handlers: what a stream thread does with a record it cannot handle (Kafka Streams' handler configs).

They live apart from the tasks so that one per thread can be shared by all its tasks, and so the choice
(fail, skip, or send the raw record to a dead-letter topic) is made in one place.
"""

from __future__ import annotations

import logging

from aiokafka.structs import ConsumerRecord

from streamlet.errors import DeserializationFailure
from streamlet.runtime.record_collector import RecordCollector
from streamlet.task_id import TaskId

log = logging.getLogger("streamlet.task")


class DeserializationHandler:
    """What to do with a record its source serde cannot decode (Kafka Streams' handler config)."""

    def __init__(self, mode: str, collector: RecordCollector, dead_letter_topic: str = "") -> None:
        self.mode = mode
        self.collector = collector
        self.dead_letter_topic = dead_letter_topic
        self.skipped = 0  # metric: records dropped by log_and_continue or sent to the dead-letter topic

    def handle(self, task_id: TaskId, record: ConsumerRecord, exc: Exception) -> None:
        where = f"topic {record.topic} partition {record.partition} offset {record.offset}"
        if self.mode == "fail":
            raise DeserializationFailure(
                f"task {task_id}: cannot deserialize the record at {where}: {exc}. Processing stops "
                "(deserialization_exception_handler='fail'); use 'log_and_continue' or 'dead_letter' to skip it"
            ) from exc
        self.skipped += 1
        if self.mode == "dead_letter":
            log.warning(
                "task %s: record at %s cannot be deserialized (%s); sent to %s",
                task_id,
                where,
                exc,
                self.dead_letter_topic,
            )
            self.collector.send(self.dead_letter_topic, record.key, record.value, record.timestamp)
        else:
            log.warning("task %s: skipping record at %s that cannot be deserialized: %s", task_id, where, exc)
