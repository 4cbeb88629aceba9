"""The context a `process()` processor gets (Kafka Streams' `ProcessorContext` of the Processor API).

One per processor node and task. It is the task's context (stores, `send`, `task_id`, ...: every attribute
of the task's context is readable through it, so factories written against the task context keep working)
plus what belongs to one node: `forward()` to the node's children and `schedule()` of punctuators.
"""

from __future__ import annotations

from typing import Any, Protocol

from streamlet.runtime.dropped_records import DroppedRecords
from streamlet.runtime.forwarding import Forward
from streamlet.runtime.punctuation import Cancellable, PunctuationType, Punctuator, TaskPunctuations
from streamlet.runtime.record_context import RecordContext

__all__ = ["ProcessorContext"]


class _Graph(Protocol):
    """What a processor context reads of its task's graph."""

    dropped: DroppedRecords
    stream_time: int


class ProcessorContext:
    """`forward`, `schedule` and the current record's metadata for one processor node of one task."""

    __slots__ = ("node", "_task", "_record", "_punctuations", "_forward", "_graph", "__weakref__")

    def __init__(
        self,
        node: str,
        task: Any,
        record: RecordContext,
        punctuations: TaskPunctuations,
        forward: Forward,
        graph: _Graph | None = None,
    ) -> None:
        self.node = node
        self._task = task
        self._record = record
        self._punctuations = punctuations
        self._forward = forward
        self._graph = graph

    @property
    def dropped(self) -> DroppedRecords | None:
        """The task's dropped-records sensor, where a processor counts the records it skips (None: none)."""
        return None if self._graph is None else self._graph.dropped

    @property
    def stream_time(self) -> int:
        """The task's stream time: the largest timestamp it has processed (-1: none yet, or no graph)."""
        return -1 if self._graph is None else self._graph.stream_time

    @property
    def task(self) -> Any:
        """The task's own context, shared by all of its processors (one per task, where this is one per node)."""
        return self._task

    @property
    def timestamp(self) -> int:
        """The current record's timestamp (a punctuation's time while a punctuator runs)."""
        return self._record.timestamp

    @property
    def topic(self) -> str | None:
        """The current record's source topic (None while a punctuator runs)."""
        return self._record.topic

    @property
    def partition(self) -> int:
        return self._record.partition

    @property
    def offset(self) -> int:
        return self._record.offset

    def forward(self, key: Any, value: Any, *, timestamp: int | None = None) -> None:
        """Send `(key, value)` to this node's children, with the current timestamp unless one is given."""
        if timestamp is None:
            self._forward(key, value)
            return
        record = self._record
        current = record.timestamp
        record.timestamp = timestamp
        try:
            self._forward(key, value)
        finally:
            record.timestamp = current

    def schedule(self, interval_ms: int, punctuation_type: PunctuationType, punctuator: Punctuator) -> Cancellable:
        """Call `punctuator(timestamp)` every `interval_ms` of stream time or wall-clock time (see
        `streamlet.runtime.punctuation`); `cancel()` the result to stop."""
        return self._punctuations.schedule(self.node, interval_ms, punctuation_type, punctuator)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._task, name)

    def __repr__(self) -> str:
        return f"ProcessorContext({self.node}, {self._task!r})"
