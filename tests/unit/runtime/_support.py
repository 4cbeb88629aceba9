"""A fake runtime for processor-graph tests: a task context that records sends, and test-double stores."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from streamlet.runtime.processor_graph import TaskProcessorGraph, build_task_graph
from streamlet.runtime.topic_names import TopicNames
from streamlet.task_id import TaskId
from streamlet.topology import Topology


class DictStore:
    """Test double of a state store without a cache: the flush listener fires on every put."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.data: dict[bytes, bytes] = {}
        self.listener: Any = None

    def get(self, key: bytes) -> bytes | None:
        assert isinstance(key, bytes)
        return self.data.get(key)

    def put(self, key: bytes, value: bytes | None) -> None:
        assert isinstance(key, bytes) and (value is None or isinstance(value, bytes))
        old = self.data.get(key)
        if value is None:
            self.data.pop(key, None)
        else:
            self.data[key] = value
        if self.listener is not None:
            self.listener(key, value, old)

    def delete(self, key: bytes) -> bytes | None:
        old = self.data.pop(key, None)
        if self.listener is not None:
            self.listener(key, None, old)
        return old

    def set_flush_listener(self, listener: Any) -> None:
        self.listener = listener


class CachingStore(DictStore):
    """Test double of a cached store: puts are buffered; `flush()` calls the listener once per dirty key."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.dirty: dict[bytes, tuple[bytes | None, int]] = {}
        self.timestamp = 0

    def put(self, key: bytes, value: bytes | None) -> None:
        self.dirty[key] = (value, self.timestamp)
        if value is None:
            self.data.pop(key, None)
        else:
            self.data[key] = value

    def flush(self) -> None:
        dirty, self.dirty = self.dirty, {}
        for key, (value, timestamp) in dirty.items():
            self.listener(key, value, None, timestamp)


@dataclass
class Sent:
    topic: str
    key: bytes | None
    value: bytes | None
    timestamp: int
    partition: int | None


@dataclass
class FakeContext:
    task_id: TaskId
    application_id: str = "app"
    store_factory: Any = DictStore
    stores: dict[str, Any] = field(default_factory=dict)
    sent: list[Sent] = field(default_factory=list)

    def get_state_store(self, name: str) -> Any:
        if name not in self.stores:
            self.stores[name] = self.store_factory(name)
        return self.stores[name]

    def send(
        self, topic: str, key: bytes | None, value: bytes | None, timestamp: int, partition: int | None = None
    ) -> None:
        self.sent.append(Sent(topic, key, value, timestamp, partition))


def graph_of(topology: Topology, task_id: TaskId, context: FakeContext) -> TaskProcessorGraph:
    """The task's processor graph for the application id the fake context names."""
    return build_task_graph(TopicNames(topology, context.application_id), task_id, context)
