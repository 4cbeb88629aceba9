"""`app.GlobalTable`: Faust's GlobalTable, a table every worker holds whole, on streamlet's global state.

It is a GlobalKTable of its changelog topic `<application_id>-<name>-changelog` (Faust's name; compacted,
created when the worker starts): every worker restores all of its partitions before its agents run and then
follows it (`streamlet.runtime.global_stream_thread`), so any agent reads any key, whatever partition its
record came from, and `items()`/`len()` cover the whole table.

Writes are what Faust's GlobalTable does with them: they go to the changelog topic, which every worker reads.
streamlet sends them from the agent's task with the record's timestamp (so they are produced before the
record's offset is committed: at-least-once) and applies them to the worker's own copy at once, so an agent
reads its writes. Other workers see a write once they have read it from the topic, and when several workers
write one key, its last record in the topic wins everywhere, the writer's copy included once it reads it back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from streamlet.errors import TopologyError
from streamlet.faust.agent_context import current_context
from streamlet.faust.tables import Table
from streamlet.faust.topic_ref import record_timestamp
from streamlet.faust.windowed_tables import WindowWrapper
from streamlet.serdes import SerdeLike
from streamlet.state import timestamped
from streamlet.topology import GlobalKTable
from streamlet.topology.windows import TimeWindows

__all__ = ["GlobalTable", "changelog_topic"]

_NO_DEFAULT: Any = object()


def changelog_topic(application_id: str, name: str) -> str:
    """The topic a GlobalTable is stored in (Faust's changelog topic name)."""
    return f"{application_id}-{name}-changelog"


class GlobalTable(Table):
    """A table whose store (`name`) is a global store of `topic`: readable whole from any agent."""

    def __init__(
        self,
        name: str,
        topic: str,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        default: Callable[[], Any] | None = None,
        *,
        partitions: int = 1,
        key_type: Any = None,
        value_type: Any = None,
    ) -> None:
        super().__init__(name, key_serde, value_serde, default, key_type=key_type, value_type=value_type)
        self.topic = topic
        self.partitions = partitions
        self.ktable: GlobalKTable | None = None  # the DSL's table, once the App compiles (for stream joins)

    def _windowed(self, windows: TimeWindows) -> WindowWrapper:
        raise TopologyError(f"global table {self.name} cannot be windowed")

    def _store(self) -> Any:
        """The global store: in an agent the store itself, whose values carry their timestamp (stripped here);
        in a page its interactive-query view (this worker's whole copy), whose values do not."""
        store = super()._store()
        return store if getattr(store, "plain_values", False) else _PlainValues(store)

    def _local_stores(self) -> Sequence[Any]:
        return [self._store()]  # the whole table, on every worker

    def _write(self, key: Any, value: Any) -> None:
        ctx = current_context(f"global table {self.name}")
        key_bytes = self._key(key)
        value_bytes = None if value is None else self.value_serde.serialize(self.name, value)
        timestamp = record_timestamp(ctx)
        ctx.send(self.topic, key_bytes, value_bytes, timestamp)
        store = ctx.get_state_store(self.name)
        if value_bytes is None:
            store.delete(key_bytes)
        else:
            store.put(key_bytes, timestamped.encode(timestamp, value_bytes))

    def __setitem__(self, key: Any, value: Any) -> None:
        if value is None:
            raise ValueError(f"global table {self.name}: None is not a value (delete the key instead)")
        self._write(key, value)

    def __delitem__(self, key: Any) -> None:
        """Delete `key`: a tombstone to the topic (also for a missing key, which every worker then skips)."""
        self._write(key, None)

    def pop(self, key: Any, default: Any = _NO_DEFAULT) -> Any:
        raw = self._store().get(self._key(key))
        if raw is None:
            if default is _NO_DEFAULT:
                raise KeyError(key)
            return default
        self._write(key, None)
        return self._value(raw)

    def __repr__(self) -> str:
        return f"GlobalTable({self.name!r}, topic={self.topic!r})"


class _PlainValues:
    """A global store's reads, values without their timestamps (what a table decodes)."""

    __slots__ = ("_store",)

    def __init__(self, store: Any) -> None:
        self._store = store

    def get(self, key: bytes) -> bytes | None:
        raw: bytes | None = self._store.get(key)
        return None if raw is None else timestamped.value_of(raw)

    def all(self) -> Iterator[tuple[bytes, bytes]]:
        for key, raw in self._store.all():
            yield key, timestamped.value_of(raw)
