"""Exact emulation of the two Java collections whose *iteration order* leaks into Kafka Streams' assignment.

* `java.util.PriorityQueue`: a binary heap. `poll()` returns the minimum, but ties between equal keys are
  resolved by heap position, and iterating the queue walks the backing array, which is not priority
  order. The assignor relies on both (standby movements with equal keys; the last loop of
  `assignTasksToThreads`), so a Python `heapq` or `sorted()` would give different assignments.
* `java.util.HashSet` / `HashMap` keys: `ClientState.statefulActiveTasks()` is a HashSet, and the order its
  elements come out in decides the initial heap array of `assignTasksToThreads`; the sticky assignors
  walk HashSets of clients and tasks and take the first or least-loaded one they meet.

Only what the assignor uses is emulated, but that part is bit-for-bit (siftUp/siftDown/removeAt as in
the JDK 17 sources).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")
H = TypeVar("H", bound=Hashable)

_DEFAULT_CAPACITY = 16
_LOAD_FACTOR = 0.75
_TREEIFY_THRESHOLD = 8
_MIN_TREEIFY_CAPACITY = 64


def _identity(x: Any) -> Any:
    return x


class JavaPriorityQueue(Generic[T]):
    """`java.util.PriorityQueue` with a comparator given as a sort key (equal keys compare as 0).

    Iterating yields the backing array in order, exactly like Java's iterator.
    """

    __slots__ = ("_es", "_key")

    def __init__(self, key: Callable[[T], Any] = _identity) -> None:
        self._es: list[T] = []
        self._key = key

    @classmethod
    def from_collection(
        cls, items: Iterable[T], key: Callable[[T], Any] = _identity, *, is_sorted_set: bool = False
    ) -> JavaPriorityQueue[T]:
        """`new PriorityQueue<>(collection)`: copy in iteration order, then heapify unless it is a SortedSet."""
        queue = cls(key)
        queue._es = list(items)
        if not is_sorted_set:
            queue._heapify()
        return queue

    def __len__(self) -> int:
        return len(self._es)

    def __bool__(self) -> bool:
        return bool(self._es)

    def __iter__(self) -> Iterator[T]:
        return iter(list(self._es))

    def __contains__(self, item: object) -> bool:
        return item in self._es

    def offer(self, item: T) -> None:
        self._es.append(item)
        self._sift_up(len(self._es) - 1, item)

    add = offer

    def peek(self) -> T | None:
        return self._es[0] if self._es else None

    def poll(self) -> T | None:
        es = self._es
        if not es:
            return None
        result = es[0]
        last = es.pop()
        if es:
            self._sift_down(0, last)
        return result

    def remove(self, item: object) -> bool:
        """Remove the first element (array order) equal to `item`, like `PriorityQueue.remove(Object)`."""
        for i, element in enumerate(self._es):
            if element is item or element == item:  # identity first: a process id's == runs in Python
                self._remove_at(i)
                return True
        return False

    def _remove_at(self, i: int) -> None:
        es = self._es
        s = len(es) - 1
        if s == i:
            es.pop()
            return
        moved = es.pop()
        self._sift_down(i, moved)
        if es[i] is moved:
            self._sift_up(i, moved)

    def _heapify(self) -> None:
        n = len(self._es)
        for i in range((n >> 1) - 1, -1, -1):
            self._sift_down(i, self._es[i])

    def _sift_up(self, k: int, x: T) -> None:
        es, key = self._es, self._key
        kx = key(x)
        while k > 0:
            parent = (k - 1) >> 1
            e = es[parent]
            if not kx < key(e):  # Java: compare(x, e) >= 0 -> stop
                break
            es[k] = e
            k = parent
        es[k] = x

    def _sift_down(self, k: int, x: T) -> None:
        es, key = self._es, self._key
        n = len(es)
        kx = key(x)
        half = n >> 1
        while k < half:
            child = (k << 1) + 1
            c = es[child]
            right = child + 1
            if right < n and key(c) > key(es[right]):
                child = right
                c = es[child]
            if not kx > key(c):  # Java: compare(x, c) <= 0 -> stop
                break
            es[k] = c
            k = child
        es[k] = x


def _spread(hash_code: int) -> int:
    """`HashMap.hash()`: h ^ (h >>> 16) on the 32-bit pattern."""
    h = hash_code & 0xFFFFFFFF
    return h ^ (h >> 16)


def _table_size_for(cap: int) -> int:
    """`HashMap.tableSizeFor`: the smallest power of two >= cap (at least 1)."""
    n = 1
    while n < cap:
        n <<= 1
    return n


def java_hash_set_copy_capacity(size: int) -> int:
    """Table size of `new HashSet<>(collection)` on JDK 17: `new HashMap<>(max((int) (size / .75f) + 1, 16))`.

    It differs from the size an empty set grows to by adding the same elements when `size / .75` is a
    power of two (12, 24, 48, ... elements), so copies can iterate in a different order than their source.
    `(int) (size / .75f)` is `4 * size // 3` exactly for any realistic size (float division is
    correctly rounded and cannot cross an integer below 2**24).
    """
    return _table_size_for(max(4 * size // 3 + 1, _DEFAULT_CAPACITY))


def java_hash_set_copy_order(items: Iterable[H], hash_code: Callable[[H], int]) -> list[H]:
    """Iteration order of `new HashSet<>(source)` where `source` iterates as `items`."""
    items = list(items)
    return java_hash_set_order(items, hash_code, capacity=java_hash_set_copy_capacity(len(items)))


def java_hash_set_order(
    items: Iterable[H], hash_code: Callable[[H], int], *, capacity: int = _DEFAULT_CAPACITY
) -> list[H]:
    """Iteration order of a `new HashSet<>()` (or a HashMap's keys) after adding `items` in the given order.

    Models the default table (16 buckets, or `capacity` for a presized one, load factor 0.75), doubling
    when size exceeds the threshold and the "resize instead of treeify" rule for a 9th entry in one
    bucket while the table is smaller than 64. Within a bucket, entries keep insertion order (resizes
    split buckets order-preservingly), so the order is (bucket at the final capacity, insertion index).
    Re-adding an element (or re-putting a key) keeps its place. Buckets that Java would turn into trees
    (>= 9 colliding entries with >= 64 buckets) are not modelled; task ids practically never collide
    that much.
    """
    if not isinstance(items, list | tuple):
        items = list(items)
    if len(items) < 2:
        return list(items)  # one bucket or none: no resize, nothing to order
    fast = _order_without_treeify_resize(items, hash_code, capacity)
    return _order_by_replaying_insertions(items, hash_code, capacity) if fast is None else fast


def _order_by_replaying_insertions(
    items: list[H] | tuple[H, ...], hash_code: Callable[[H], int], capacity: int
) -> list[H]:
    """`java_hash_set_order` by adding the items one by one to a model of the table's bucket sizes."""
    entries: list[tuple[int, H]] = []
    bucket_sizes: dict[int, int] = {}
    seen: set[H] = set()

    def resize() -> None:
        nonlocal capacity
        capacity *= 2
        bucket_sizes.clear()
        for other, _ in entries:
            bucket_sizes[other & (capacity - 1)] = bucket_sizes.get(other & (capacity - 1), 0) + 1

    for item in items:
        if item in seen:
            continue
        seen.add(item)
        h = _spread(hash_code(item))
        bucket = h & (capacity - 1)
        in_bucket = bucket_sizes.get(bucket, 0)
        entries.append((h, item))
        bucket_sizes[bucket] = in_bucket + 1
        if in_bucket >= _TREEIFY_THRESHOLD and capacity < _MIN_TREEIFY_CAPACITY:
            resize()
        if len(entries) > capacity * _LOAD_FACTOR:
            resize()
    mask = capacity - 1
    order = sorted(range(len(entries)), key=lambda i: (entries[i][0] & mask, i))
    return [entries[i][1] for i in order]


def _order_without_treeify_resize(
    items: list[H] | tuple[H, ...], hash_code: Callable[[H], int], capacity: int
) -> list[H] | None:
    """`java_hash_set_order` when no bucket can hold 9 entries while the table is smaller than 64, else None.

    Then only the load factor resizes the table, so its final size follows from the number of distinct
    items, and a stable sort by bucket keeps insertion order within a bucket: the sets the sticky assignors
    build per task and replica (tens of clients) are ordered without replaying every insertion. A bucket of
    a 16- or 32-entry table holds only items that share their hash's low 4 bits, so fewer than 9 items per
    low-4-bit value (or a table of 64 or more from the start) rules the resize out.
    """
    if capacity < _DEFAULT_CAPACITY:
        return None  # a table under 16 buckets is not covered by the low-4-bit argument
    unique = list(dict.fromkeys(items))
    spread = [_spread(hash_code(item)) for item in unique]
    if capacity < _MIN_TREEIFY_CAPACITY and max(Counter([h & 15 for h in spread]).values()) > _TREEIFY_THRESHOLD:
        return None
    while len(unique) > capacity * _LOAD_FACTOR:
        capacity *= 2
    mask = capacity - 1
    buckets = [h & mask for h in spread]
    return [unique[i] for i in sorted(range(len(unique)), key=buckets.__getitem__)]
