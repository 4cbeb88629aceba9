"""The key-value store interface every layer implements, and the in-memory store.

Stores are byte-oriented (serdes live above them, in the processor layer), exactly like Kafka Streams'
`KeyValueStore<Bytes, byte[]>` stack. Byte keys compare lexicographically as unsigned bytes, which is also
RocksDB's default comparator, so `range()` means the same thing on every implementation.

Conventions shared by all implementations (Kafka Streams' `KeyValueStore`):

* `put(key, None)` is a delete; `put_all` entries with a `None` value are deletes.
* `delete(key)` returns the previous value (or None).
* `range(from_key, to_key)` is inclusive at both ends; `None` means unbounded; `from_key > to_key` gives
  an empty iterator. `range` and `all` yield `(key, value)` in ascending key order.
* Iterators are lazy and hold no native resources between steps, so an abandoned iterator never blocks
  `close()`; they are not point-in-time snapshots (a write during iteration may or may not be seen).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol, runtime_checkable

KeyValue = tuple[bytes, bytes]
#: `(key, value)` where value None means delete: the unit of `put_all` and of changelog records.
Entry = tuple[bytes, bytes | None]


@runtime_checkable
class KeyValueStore(Protocol):
    """A byte-oriented key-value state store (see the module docstring for the shared conventions)."""

    @property
    def name(self) -> str: ...

    @property
    def persistent(self) -> bool:
        """True if the data survives a restart on its own (then it is checkpointed, not fully restored)."""
        ...

    def get(self, key: bytes) -> bytes | None: ...

    def put(self, key: bytes, value: bytes | None) -> None: ...

    def put_all(self, entries: Iterable[Entry]) -> None: ...

    def delete(self, key: bytes) -> bytes | None: ...

    def range(self, from_key: bytes | None, to_key: bytes | None) -> Iterator[KeyValue]: ...

    def all(self) -> Iterator[KeyValue]: ...

    def approximate_num_entries(self) -> int: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


def check_key(key: object) -> bytes:
    """Reject non-bytes keys early, with a message, rather than deep inside RocksDB."""
    if not isinstance(key, bytes):
        raise TypeError(f"state store keys must be bytes, got {type(key).__name__}")
    return key


def check_value(value: object) -> bytes | None:
    if value is not None and not isinstance(value, bytes):
        raise TypeError(f"state store values must be bytes or None, got {type(value).__name__}")
    return value


def empty_range(from_key: bytes | None, to_key: bytes | None) -> bool:
    return from_key is not None and to_key is not None and from_key > to_key


class SortedKeyIndex:
    """Keys of a dict in sorted order, maintained lazily for range scans.

    A balanced tree (Java's TreeMap) is not in the standard library. Writes only record what changed (O(1));
    the first range scan after changes applies them: a few changes one by one (a bisect and a C-level list
    insert or delete each), many at once by filtering the list and letting Timsort merge the new keys in.
    Session and sliding-window aggregations scan a range on every record and change a key or two in
    between, so a scan must not cost a Python-level pass over every key.
    """

    def __init__(self) -> None:
        self._sorted: list[bytes] = []
        self._added: set[bytes] = set()
        self._removed: set[bytes] = set()

    def added(self, key: bytes) -> None:
        """`key` was inserted (it was not present before)."""
        self._added.add(key)

    def removed(self, key: bytes) -> None:
        """`key` was removed."""
        self._added.discard(key)
        self._removed.add(key)

    def clear(self) -> None:
        self._sorted = []
        self._added = set()
        self._removed = set()

    def _apply_changes(self) -> None:
        added, removed, keys = self._added, self._removed, self._sorted
        if (len(added) + len(removed)) * 32 > len(keys):
            # Removals first: a removed-then-re-added key is in both sets and must stay, once.
            merged = [k for k in keys if k not in removed] if removed else keys
            merged.extend(added)
            merged.sort()
            self._sorted = merged
        else:
            for key in removed:
                i = bisect.bisect_left(keys, key)
                if i < len(keys) and keys[i] == key:
                    del keys[i]
            for key in added:
                bisect.insort(keys, key)
        self._added = set()
        self._removed = set()

    def keys_in_range(self, live: Callable[[bytes], bool], from_key: bytes | None, to_key: bytes | None) -> list[bytes]:
        """A copy of the live keys in `[from_key, to_key]` (None = unbounded), ascending.

        `live` is kept for callers' sake: the recorded changes alone say which keys are present."""
        if self._added or self._removed:
            self._apply_changes()
        if empty_range(from_key, to_key):
            return []
        lo = 0 if from_key is None else bisect.bisect_left(self._sorted, from_key)
        hi = len(self._sorted) if to_key is None else bisect.bisect_right(self._sorted, to_key)
        return self._sorted[lo:hi]


class InMemoryKeyValueStore:
    """Kafka Streams' in-memory key-value store: a sorted map that lives and dies with the process.

    Not persistent: after a restart it is restored from its changelog in full (if logged), and it is never
    checkpointed.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._data: dict[bytes, bytes] = {}
        self._index = SortedKeyIndex()
        self._open = True

    @property
    def name(self) -> str:
        return self._name

    @property
    def persistent(self) -> bool:
        return False

    @property
    def is_open(self) -> bool:
        return self._open

    def get(self, key: bytes) -> bytes | None:
        return self._data.get(check_key(key))

    def put(self, key: bytes, value: bytes | None) -> None:
        check_key(key)
        if check_value(value) is None:
            self.delete(key)
            return
        if key not in self._data:
            self._index.added(key)
        self._data[key] = value  # type: ignore[assignment]

    def put_all(self, entries: Iterable[Entry]) -> None:
        for key, value in entries:
            self.put(key, value)

    def delete(self, key: bytes) -> bytes | None:
        old = self._data.pop(check_key(key), None)
        if old is not None:
            self._index.removed(key)
        return old

    def range(self, from_key: bytes | None, to_key: bytes | None) -> Iterator[KeyValue]:
        keys = self._index.keys_in_range(self._data.__contains__, from_key, to_key)
        return self._iterate(keys)

    def all(self) -> Iterator[KeyValue]:
        return self.range(None, None)

    def _iterate(self, keys: list[bytes]) -> Iterator[KeyValue]:
        data = self._data
        for key in keys:
            value = data.get(key)
            if value is not None:
                yield key, value

    def approximate_num_entries(self) -> int:
        return len(self._data)

    def flush(self) -> None:
        """Nothing to do: the data is only in memory and the changelog is its durable copy."""

    def close(self) -> None:
        self._data = {}
        self._index.clear()
        self._open = False

    def wipe(self) -> None:
        """Drop all data (the store stays open): used when its state is discarded before a restore."""
        self._data = {}
        self._index.clear()
