"""Changelog records for restore tests, shaped like the consumer's (`.offset`, `.key`, `.value`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from aiokafka.structs import TopicPartition

from streamlet.state.state_manager import ProcessorStateManager


@dataclass(frozen=True)
class Record:
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int = 0


def restore(psm: ProcessorStateManager, tp: TopicPartition, records: Iterable[tuple[int, bytes, bytes | None]]) -> int:
    """Feed `(offset, key, value)` tuples through the runtime's restore path."""
    return psm.restore_records(tp, [Record(*r) for r in records])
