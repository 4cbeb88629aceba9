"""UncommittedWrites: a transactional store's writes since its last commit (KIP-892's transaction buffer).

Under `exactly_once_v2` a RocksDB store must never hold a value whose changelog record belongs to a Kafka
transaction that has not committed: a crash would leave the store ahead of its changelog, which is why stores
used to be wiped after every dirty close. Kafka Streams 4.4 keeps such writes in a RocksDB WriteBatchWithIndex;
rocksdict has no WriteBatchWithIndex, so this is the equivalent in Python: an ordered overlay of puts,
tombstones and range deletions that reads merge over the committed state (read-your-writes), applied to
RocksDB in one WriteBatch, together with the changelog offsets, once the transaction has committed.

Ordering rule: a range deletion drops the overlay entries it covers, so every entry left in the overlay was
written after every range deletion that covers it. Applying the range deletions first and the entries after
them therefore reproduces the order of the writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from streamlet.state.store import KeyValue, SortedKeyIndex

#: Bytes counted per overlay entry on top of its key and value (dict slot, index entry, object headers), so that
#: many small writes are not under-counted against `statestore_uncommitted_max_bytes`.
ENTRY_OVERHEAD_BYTES = 64


class UncommittedWrites:
    """Writes since the last commit: key -> value (None = tombstone), plus range deletions `[from, to)`."""

    def __init__(self) -> None:
        self._entries: dict[bytes, bytes | None] = {}
        self._index = SortedKeyIndex()
        self._ranges: list[tuple[bytes, bytes]] = []
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._entries) + len(self._ranges)

    @property
    def approximate_bytes(self) -> int:
        """Kafka's `approximateNumUncommittedBytes`: what the overlay holds, 0 when empty."""
        return self._bytes

    # ------------------------------------------------------------------ writes

    def put(self, key: bytes, value: bytes | None) -> None:
        old = self._entries.get(key, b"")
        if key in self._entries:
            self._bytes -= _size(key, old)
        else:
            self._index.added(key)
        self._entries[key] = value
        self._bytes += _size(key, value)

    def delete_range(self, from_key: bytes, to_key: bytes) -> None:
        """Delete `[from_key, to_key)`: drop the overlay's entries there and remember the range for the store."""
        if from_key >= to_key:
            return
        for key in self._index.keys_in_range(self._entries.__contains__, from_key, to_key):
            if key == to_key:
                continue
            self._bytes -= _size(key, self._entries.pop(key))
            self._index.removed(key)
        self._ranges.append((from_key, to_key))
        self._bytes += len(from_key) + len(to_key) + ENTRY_OVERHEAD_BYTES

    def clear(self) -> None:
        """Forget everything (after a commit applied it, or on a rollback)."""
        self._entries = {}
        self._index.clear()
        self._ranges = []
        self._bytes = 0

    # ------------------------------------------------------------------ reads

    def lookup(self, key: bytes) -> tuple[bool, bytes | None]:
        """(True, value) if the overlay decides the key (value None: deleted), else (False, None)."""
        if key in self._entries:
            return True, self._entries[key]
        if self._ranges and self.range_deleted(key):
            return True, None
        return False, None

    def range_deleted(self, key: bytes) -> bool:
        return any(lo <= key < hi for lo, hi in self._ranges)

    def merged(self, committed: Iterator[KeyValue], from_key: bytes | None, to_key: bytes | None) -> Iterator[KeyValue]:
        """Merge `committed` (ascending, already bounded to `[from_key, to_key]`) with the overlay's entries in
        that range: the overlay wins on equal keys, tombstones and range deletions hide committed entries."""
        if not self._entries and not self._ranges:
            yield from committed
            return
        keys = self._index.keys_in_range(self._entries.__contains__, from_key, to_key)
        entries = self._entries
        hidden: Callable[[bytes], bool] = self.range_deleted if self._ranges else _never
        i = 0
        for key, value in committed:
            while i < len(keys) and keys[i] < key:
                pending = entries.get(keys[i])
                if pending is not None:
                    yield keys[i], pending
                i += 1
            if i < len(keys) and keys[i] == key:
                pending = entries.get(key)
                if pending is not None:
                    yield key, pending
                i += 1
            elif key not in entries and not hidden(key):
                yield key, value
        for key in keys[i:]:
            pending = entries.get(key)
            if pending is not None:
                yield key, pending

    # ------------------------------------------------------------------ commit

    def range_deletions(self) -> list[tuple[bytes, bytes]]:
        return list(self._ranges)

    def entries(self) -> list[tuple[bytes, bytes | None]]:
        """The entries in key order (the order does not matter to a WriteBatch; it keeps batches reproducible)."""
        keys = self._index.keys_in_range(self._entries.__contains__, None, None)
        return [(key, self._entries[key]) for key in keys]


def _size(key: bytes, value: bytes | None) -> int:
    return len(key) + (0 if value is None else len(value)) + ENTRY_OVERHEAD_BYTES


def _never(key: bytes) -> bool:
    return False
