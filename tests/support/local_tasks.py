"""Fake local tasks of WordCount's count store, for interactive-query tests without Kafka.

An interactive query reads a client's stores through its threads' task managers (`active` and `standby`
task maps); these fakes hold the same shape over real in-memory stores, holding what a DSL count store holds.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

from aiokafka.structs import TopicPartition

from streamlet.runtime.queries import partition_for_key
from streamlet.runtime.task_state import TaskState
from streamlet.state import timestamped
from streamlet.state.store import InMemoryKeyValueStore
from streamlet.task_id import TaskId

STORE = "counts-store"
SUB = 1  # WordCount: sub-topology 1 counts, reading the repartition topic
CHANGELOG = "app-counts-store-changelog"


def word_on(partition: int, partitions: int = 6) -> str:
    """A word whose key the producer places on `partition`."""
    return next(w for w in (f"w{i}" for i in range(10_000)) if partition_for_key(w.encode(), partitions) == partition)


def count_store(counts: dict[str, int]) -> InMemoryKeyValueStore:
    """A store holding `counts` as a DSL count store does (timestamped int64 values)."""
    store = InMemoryKeyValueStore(STORE)
    for word, count in counts.items():
        store.put(word.encode(), timestamped.encode(0, struct.pack(">q", count)))
    return store


@dataclass(eq=False)
class Active:
    state: TaskState
    stores: dict[str, Any]

    @property
    def queryable_stores(self) -> dict[str, Any]:
        """In-memory stores are never transactional: queries read what processors use."""
        return self.stores


def running(store: InMemoryKeyValueStore) -> Active:
    return Active(TaskState.RUNNING, {STORE: store})


@dataclass(eq=False)
class Tasks:
    """One thread's task manager: its active and standby tasks by id."""

    active: dict[TaskId, Any] = field(default_factory=dict)
    standby: dict[TaskId, Any] = field(default_factory=dict)


class StandbyStateManager:
    """A standby's state manager at changelog `position` of the store's partition."""

    def __init__(self, store: InMemoryKeyValueStore, partition: int, position: int) -> None:
        self._store = store
        self._tp = TopicPartition(CHANGELOG, partition)
        self.position = position

    def changelog_partitions(self) -> dict[str, TopicPartition]:
        return {STORE: self._tp}

    def changelog_offsets(self) -> dict[TopicPartition, int]:
        return {self._tp: self.position}

    def stores(self) -> dict[str, Any]:
        return {STORE: self._store}


@dataclass(eq=False)
class Standby:
    state_manager: StandbyStateManager
