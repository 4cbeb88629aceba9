"""Task lifecycle states (Kafka Streams' Task.State, less the ones aiokafka's eager protocol never needs)."""

from __future__ import annotations

import enum


class TaskState(enum.Enum):
    CREATED = "CREATED"
    RESTORING = "RESTORING"
    RUNNING = "RUNNING"
    SUSPENDED = "SUSPENDED"
    CLOSED = "CLOSED"
