"""Just enough of Java's collections to print `TopologyDescription` exactly as Kafka Streams does.

Kafka Streams' description iterates `HashSet`/`HashMap`s of names (whose order follows
`String.hashCode()`) and keeps each node's predecessors and successors in `TreeSet`s whose comparator
reads a *mutable* field (the sub-tree size), so the iteration order of those sets depends on the
red-black tree's shape at insertion time. Both are reproduced here; only describe() uses them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


def string_hash(text: str) -> int:
    """Java's `String.hashCode()` as an unsigned 32-bit int (over UTF-16 code units)."""
    h = 0
    data = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h


def java_string_key(text: str) -> bytes:
    """Sort key ordering strings like Java's `String.compareTo` (UTF-16 code units)."""
    return text.encode("utf-16-be", "surrogatepass")


def capacity_by_growth(size: int) -> int:
    """Table size of a default `HashMap`/`HashSet` after `size` single insertions."""
    capacity = 16
    while size > capacity * 3 // 4:
        capacity *= 2
    return capacity


def capacity_of_copy(size: int) -> int:
    """Table size of `new HashSet<>(collection)` for a collection of `size` elements."""
    wanted = max(int(size / 0.75) + 1, 16)
    capacity = 1
    while capacity < wanted:
        capacity *= 2
    return capacity


def hash_order(keys: Iterable[str], capacity: int) -> list[str]:
    """Iteration order of a Java HashMap/HashSet of `keys` (given in insertion order) with `capacity`.

    Buckets are visited in index order; within a bucket, entries keep insertion order (resizes preserve
    it). Tree bins (8+ colliding entries) are not modelled.
    """
    mask = capacity - 1

    def bucket(key: str) -> int:
        h = string_hash(key)
        return (h ^ (h >> 16)) & mask

    return sorted(keys, key=bucket)  # sorted() is stable: insertion order within a bucket


def hash_set_order(keys: Iterable[str]) -> list[str]:
    """Iteration order of a HashSet built by adding `keys` one by one."""
    keys = list(dict.fromkeys(keys))
    return hash_order(keys, capacity_by_growth(len(keys)))


def copied_hash_set_order(keys: Iterable[str]) -> list[str]:
    """Iteration order of `new HashSet<>(c)` where `c` iterates as `keys`."""
    keys = list(dict.fromkeys(keys))
    return hash_order(keys, capacity_of_copy(len(keys)))


class _Entry(Generic[T]):
    __slots__ = ("key", "left", "right", "parent", "black")

    def __init__(self, key: T, parent: _Entry[T] | None) -> None:
        self.key = key
        self.left: _Entry[T] | None = None
        self.right: _Entry[T] | None = None
        self.parent = parent
        self.black = True


class JavaTreeSet(Generic[T]):
    """`java.util.TreeSet` insertion (a port of `TreeMap.put` + `fixAfterInsertion`) and iteration.

    Faithful even when the comparator is inconsistent over time, which is why it is needed at all.
    """

    def __init__(self, compare: Callable[[T, T], int]) -> None:
        self._compare = compare
        self._root: _Entry[T] | None = None
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def add(self, key: T) -> bool:
        t = self._root
        if t is None:
            self._root = _Entry(key, None)
            self._size = 1
            return True
        compare = self._compare
        while True:
            parent = t
            cmp = compare(key, t.key)
            if cmp < 0:
                t = t.left
            elif cmp > 0:
                t = t.right
            else:
                return False
            if t is None:
                break
        entry = _Entry(key, parent)
        if cmp < 0:
            parent.left = entry
        else:
            parent.right = entry
        self._fix_after_insertion(entry)
        self._size += 1
        return True

    def __iter__(self) -> Iterator[T]:
        stack: list[_Entry[T]] = []
        node = self._root
        while stack or node is not None:
            while node is not None:
                stack.append(node)
                node = node.left
            node = stack.pop()
            yield node.key
            node = node.right

    # --- red-black balancing, as in java.util.TreeMap -------------------------------------------------

    @staticmethod
    def _is_black(entry: _Entry[T] | None) -> bool:
        return True if entry is None else entry.black

    def _rotate_left(self, p: _Entry[T] | None) -> None:
        if p is None:
            return
        r = p.right
        assert r is not None
        p.right = r.left
        if r.left is not None:
            r.left.parent = p
        r.parent = p.parent
        if p.parent is None:
            self._root = r
        elif p.parent.left is p:
            p.parent.left = r
        else:
            p.parent.right = r
        r.left = p
        p.parent = r

    def _rotate_right(self, p: _Entry[T] | None) -> None:
        if p is None:
            return
        left = p.left
        assert left is not None
        p.left = left.right
        if left.right is not None:
            left.right.parent = p
        left.parent = p.parent
        if p.parent is None:
            self._root = left
        elif p.parent.right is p:
            p.parent.right = left
        else:
            p.parent.left = left
        left.right = p
        p.parent = left

    def _fix_after_insertion(self, x: _Entry[T] | None) -> None:
        def parent(e: _Entry[T] | None) -> _Entry[T] | None:
            return None if e is None else e.parent

        def left(e: _Entry[T] | None) -> _Entry[T] | None:
            return None if e is None else e.left

        def right(e: _Entry[T] | None) -> _Entry[T] | None:
            return None if e is None else e.right

        def set_black(e: _Entry[T] | None, black: bool) -> None:
            if e is not None:
                e.black = black

        assert x is not None
        x.black = False
        while x is not None and x is not self._root and not self._is_black(x.parent):
            if parent(x) is left(parent(parent(x))):
                y = right(parent(parent(x)))
                if not self._is_black(y):
                    set_black(parent(x), True)
                    set_black(y, True)
                    set_black(parent(parent(x)), False)
                    x = parent(parent(x))
                else:
                    if x is right(parent(x)):
                        x = parent(x)
                        self._rotate_left(x)
                    set_black(parent(x), True)
                    set_black(parent(parent(x)), False)
                    self._rotate_right(parent(parent(x)))
            else:
                y = left(parent(parent(x)))
                if not self._is_black(y):
                    set_black(parent(x), True)
                    set_black(y, True)
                    set_black(parent(parent(x)), False)
                    x = parent(parent(x))
                else:
                    if x is left(parent(x)):
                        x = parent(x)
                        self._rotate_right(x)
                    set_black(parent(x), True)
                    set_black(parent(parent(x)), False)
                    self._rotate_left(parent(parent(x)))
        assert self._root is not None
        self._root.black = True
