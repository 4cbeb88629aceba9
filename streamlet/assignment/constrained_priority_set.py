"""`ConstrainedPrioritySet`: Kafka Streams' "least-loaded client that satisfies a constraint" queue, exactly.

It is a `java.util.PriorityQueue` of process ids whose comparator reads each client's *current* load, so
an entry whose load changed while it sat in the heap is out of place until it is re-offered. Callers
re-offer changed clients right away, but a re-offer can still sift past such a stale entry, and clients
rejected by `poll` are re-inserted in `HashSet` order. In large groups this occasionally makes `poll`
return a different client than a plain argmin would (seen in randomized comparison with Kafka Streams
4.1.1), so the heap is emulated rather than replaced by `min()`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from streamlet.assignment.java_collections import JavaPriorityQueue, java_hash_set_order
from streamlet.assignment.process_id import java_uuid_hash_code, java_uuid_key
from streamlet.task_id import TaskId

C = TypeVar("C")


class ConstrainedPrioritySet:
    """Clients ordered by (weight, Java UUID order); `poll` returns the first one meeting the constraints."""

    def __init__(self, constraint: Callable[[uuid.UUID, TaskId], bool], weight: Callable[[uuid.UUID], float]) -> None:
        self._init(constraint, _heap_key(lambda pid: pid, weight))

    @classmethod
    def of_clients(
        cls,
        constraint: Callable[[uuid.UUID, TaskId], bool],
        clients: Mapping[uuid.UUID, C],
        weight: Callable[[C], float],
    ) -> ConstrainedPrioritySet:
        """Weighted by `weight(clients[pid])`: the client is kept with the Java UUID key, so a comparison
        costs no lookup by process id (the heaps compare hundreds of thousands of times per rebalance)."""
        queue = cls.__new__(cls)
        queue._init(constraint, _heap_key(clients.__getitem__, weight))
        return queue

    def _init(
        self,
        constraint: Callable[[uuid.UUID, TaskId], bool],
        key: Callable[[uuid.UUID], tuple[float, tuple[int, int]]],
    ) -> None:
        self._constraint = constraint
        self._queue: JavaPriorityQueue[uuid.UUID] = JavaPriorityQueue(key)
        self._members: set[uuid.UUID] = set()

    def poll(self, task: TaskId, extra: Callable[[uuid.UUID], bool] | None = None) -> uuid.UUID | None:
        """Remove and return the least-loaded valid client (the caller re-offers it), or None."""
        rejected: list[uuid.UUID] = []
        while self._queue:
            candidate = self._queue.poll()
            assert candidate is not None
            self._members.discard(candidate)
            if self._constraint(candidate, task) and (extra is None or extra(candidate)):
                if rejected:
                    self.offer_all(java_hash_set_order(rejected, java_uuid_hash_code))
                return candidate
            rejected.append(candidate)
        if rejected:
            self.offer_all(java_hash_set_order(rejected, java_uuid_hash_code))
        return None

    def offer(self, pid: uuid.UUID) -> None:
        """(Re-)insert `pid` with its current weight."""
        if pid in self._members:
            self._queue.remove(pid)
        else:
            self._members.add(pid)
        self._queue.offer(pid)

    def offer_all(self, pids: Iterable[uuid.UUID]) -> None:
        for pid in pids:
            self.offer(pid)


def _heap_key(
    subject_of: Callable[[uuid.UUID], C], weight: Callable[[C], float]
) -> Callable[[uuid.UUID], tuple[float, tuple[int, int]]]:
    """The heap's key, (weight, Java UUID order). The heap reads it at every comparison (a weight may change
    while its client sits in the heap); the Java UUID key and what is weighed never change, so they are kept
    per object identity, which skips hashing the UUID in Python."""
    known: dict[int, tuple[uuid.UUID, tuple[int, int], C]] = {}

    def key(pid: uuid.UUID) -> tuple[float, tuple[int, int]]:
        entry = known.get(id(pid))
        if entry is None or entry[0] is not pid:
            entry = known[id(pid)] = (pid, java_uuid_key(pid), subject_of(pid))
        return weight(entry[2]), entry[1]

    return key
