"""`app.Table`: a dict-like view of an agent's RocksDB store, with Faust's table API.

`table[key]`, `get`, `in`, `del` and assignment read and write the store of the task processing the current
record, which owns the record's key: the table is partitioned like the stream that feeds the agent (hence
`group_by` before counting by a new key).

`items()`, `keys()`, `values()`, iteration and `len()` cover every partition this worker owns, as Faust's
do (its RocksDB store iterates the databases of the worker's active partitions, never standbys): here that
is the store of every RUNNING active task of this client, across its stream threads, in task order. Tasks
still restoring and standbys are not included, so a total over `values()` is this worker's share.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from streamlet.errors import SerializationError, TopologyError
from streamlet.faust.agent_context import current_context, table_store
from streamlet.faust.window_close import WindowCloseCallback, WindowCloser
from streamlet.faust.windowed_tables import Seconds, WindowWrapper, window_spec
from streamlet.serdes import Serde, SerdeLike, resolve_serde
from streamlet.task_id import TaskId
from streamlet.topology.windows import TimeWindows
from streamlet.typed_serdes import check_serde_fits, serde_for_type

__all__ = ["Table"]

_NO_DEFAULT: Any = object()


class Table:
    """A table backed by the store `name` (changelog `<application_id>-<name>-changelog`).

    `on_window_close(key, value)` (Faust's): with `tumbling()`/`hopping()`, called once with each window's
    final value when stream time closes it; see `streamlet.faust.window_close`.
    """

    def __init__(
        self,
        name: str,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        default: Callable[[], Any] | None = None,
        *,
        key_type: Any = None,
        value_type: Any = None,
        on_window_close: WindowCloseCallback | None = None,
    ) -> None:
        self.name = name
        self.key_type = key_type
        self.value_type = value_type
        self.key_serde: Serde = _serde(key_serde, key_type, "str", f"table {name} key_serde")
        self.value_serde: Serde = _serde(value_serde, value_type, "json", f"table {name} value_serde")
        self.default = default
        self.windows: TimeWindows | None = None  # set by tumbling()/hopping(): a window store
        self.latest_window: dict[TaskId, int] = {}  # newest window start written, per task (a windowed table's now)
        self.on_window_close = on_window_close
        self.closer: WindowCloser | None = None  # a windowed table with on_window_close: see window_close.py

    # ---- windowed tables (Faust's) -------------------------------------------------------------------------

    def tumbling(self, size: Seconds, expires: Seconds | None = None) -> WindowWrapper:
        """This table as windows of `size` seconds (Faust's `tumbling`); see `streamlet.faust.windowed_tables`."""
        return self._windowed(window_spec(self.name, size, size, expires))

    def hopping(self, size: Seconds, step: Seconds, expires: Seconds | None = None) -> WindowWrapper:
        """This table as windows of `size` seconds starting every `step` (Faust's `hopping`)."""
        return self._windowed(window_spec(self.name, size, step, expires))

    def _windowed(self, windows: TimeWindows) -> WindowWrapper:
        if self.windows is not None and self.windows != windows:
            raise TopologyError(f"table {self.name} is already windowed as {self.windows}, not {windows}")
        self.windows = windows
        if self.on_window_close is not None:
            self.closer = WindowCloser(self, windows, self.on_window_close)
        return WindowWrapper(self)

    def check(self) -> None:
        """At build time: a default whose values the value serde cannot write fails here, not at the first record."""
        if self.on_window_close is not None and self.windows is None:
            raise TopologyError(
                f"table {self.name} has on_window_close but no windows: make it tumbling() or hopping()"
            )
        if self.default is None:
            return
        try:
            value = self.default()
        except Exception as exc:
            raise TopologyError(f"table {self.name}: default() raised {exc!r}") from exc
        where = f"table {self.name}: default() returns a {type(value).__name__}, but value_serde"
        check_serde_fits(self.value_serde, type(value), where)
        try:
            self.value_serde.serialize(self.name, value)
        except SerializationError as exc:
            raise TopologyError(f"{where} {self.value_serde!r} cannot write it: {exc}") from exc

    # ---- the current record's partition ----------------------------------------------------------------------

    def _store(self) -> Any:
        self._check_plain()
        return table_store(current_context(f"table {self.name}"), self.name)

    def _check_plain(self) -> None:
        if self.windows is not None:
            raise TopologyError(
                f"table {self.name} is windowed: read and write it through what tumbling()/hopping() returned"
            )

    def _key(self, key: Any) -> bytes:
        data = self.key_serde.serialize(self.name, key)
        if data is None:
            raise KeyError(f"table {self.name}: None is not a valid key")
        return data

    def _value(self, raw: bytes) -> Any:
        return self.value_serde.deserialize(self.name, raw)

    def __getitem__(self, key: Any) -> Any:
        raw = self._store().get(self._key(key))
        if raw is None:
            if self.default is not None:
                return self.default()
            raise KeyError(key)
        return self._value(raw)

    def get(self, key: Any, default: Any = None) -> Any:
        """The value; for a missing key, the table's default factory's value if it has one, else `default`.

        Faust's semantics, which differ from `dict.get`: a Faust table is a Mapping whose `get` reads
        `table[key]`, and that returns `default_factory()` for a missing key (without storing it).
        """
        raw = self._store().get(self._key(key))
        if raw is not None:
            return self._value(raw)
        return self.default() if self.default is not None else default

    def __contains__(self, key: Any) -> bool:
        return self._store().get(self._key(key)) is not None

    def __setitem__(self, key: Any, value: Any) -> None:
        self._store().put(self._key(key), self.value_serde.serialize(self.name, value))

    def __delitem__(self, key: Any) -> None:
        """Delete `key` (a tombstone in the changelog); a missing key is no error, as in Faust's RocksDB tables."""
        self._store().delete(self._key(key))

    def pop(self, key: Any, default: Any = _NO_DEFAULT) -> Any:
        """Remove `key` and return its value (or `default`; KeyError without one), as `dict.pop`."""
        store = self._store()
        raw = store.get(self._key(key))
        if raw is None:
            if default is _NO_DEFAULT:
                raise KeyError(key)
            return default
        store.delete(self._key(key))
        return self._value(raw)

    # ---- every partition this worker owns ----------------------------------------------------------------------

    def _local_stores(self) -> Sequence[Any]:
        self._check_plain()
        ctx = current_context(f"table {self.name}")
        local = getattr(ctx, "local_stores", None)
        return [table_store(ctx, self.name)] if local is None else local(self.name)

    def _raw_items(self) -> Iterator[tuple[bytes, bytes]]:
        for store in self._local_stores():
            yield from store.all()

    def items(self) -> Iterator[tuple[Any, Any]]:
        """`(key, value)` over every partition this worker owns (see the module docstring)."""
        key_de, value_of, name = self.key_serde.deserialize, self._value, self.name
        for key, value in self._raw_items():
            yield key_de(name, key), value_of(value)

    def keys(self) -> Iterator[Any]:
        key_de, name = self.key_serde.deserialize, self.name
        for key, _ in self._raw_items():
            yield key_de(name, key)

    def values(self) -> Iterator[Any]:
        value_of = self._value
        for _, value in self._raw_items():
            yield value_of(value)

    def __iter__(self) -> Iterator[Any]:
        return self.keys()

    def __len__(self) -> int:
        return sum(1 for _ in self._raw_items())

    def __repr__(self) -> str:
        return f"Table({self.name!r})"


def _serde(spec: SerdeLike, tp: Any, fallback: str, where: str) -> Serde:
    try:
        serde = resolve_serde(spec)
    except (TypeError, ValueError) as exc:
        raise TopologyError(f"{where}: {exc}") from exc
    if serde is not None:
        check_serde_fits(serde, tp, where)
        return serde
    return serde_for_type(tp) if tp is not None else resolve_serde(fallback)  # type: ignore[return-value]
