"""TaskId: the unit of work and of state, `<subtopology>_<partition>` as in Kafka Streams.

Shared by the topology (which creates tasks), the state layer (task directories, checkpoints) and the
assignment layer (which places tasks), so it lives at the top of the package.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from operator import attrgetter

_TASK_ID_RE = re.compile(r"^(\d+)_(\d+)$")


@dataclass(frozen=True, order=True, slots=True)
class TaskId:
    """A task: one partition of one sub-topology.

    Ordering is (subtopology, partition), exactly Kafka Streams' `TaskId.compareTo` for unnamed
    topologies, so sorted task lists match Java's TreeSet order.
    """

    subtopology: int
    partition: int

    def __str__(self) -> str:
        return f"{self.subtopology}_{self.partition}"

    def __repr__(self) -> str:
        return f"TaskId({self})"

    @classmethod
    def parse(cls, text: str) -> TaskId:
        """Parse `"1_3"`; raises ValueError with the offending text otherwise."""
        return _parse(text) if cls is TaskId else cls(*_parse_fields(text))

    def java_hash_code(self) -> int:
        """`Objects.hash(subtopology, partition, null)` as a signed 32-bit int (HashSet order emulation)."""
        h = ((31 + self.subtopology) * 31 + self.partition) * 31
        h &= 0xFFFFFFFF
        return h - (1 << 32) if h >= (1 << 31) else h


def _parse_fields(text: str) -> tuple[int, int]:
    match = _TASK_ID_RE.match(text)
    if match is None:
        raise ValueError(f"not a task id (expected '<subtopology>_<partition>'): {text!r}")
    return int(match.group(1)), int(match.group(2))


@lru_cache(maxsize=1 << 16)
def _parse(text: str) -> TaskId:
    """Cached: simulations parse the same few thousand ids every rebalance (TaskId is immutable)."""
    return TaskId(*_parse_fields(text))


#: Sort key with `TaskId`'s own order, compared in C (sorting by the generated `__lt__` is ~10x slower).
task_order = attrgetter("subtopology", "partition")


def sorted_tasks(tasks: Iterable[TaskId]) -> list[TaskId]:
    """`sorted(tasks)`, fast: the assignors sort task sets many times per rebalance."""
    return sorted(tasks, key=task_order)
