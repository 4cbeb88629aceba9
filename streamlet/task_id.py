"""TaskId: the unit of work and of state, `<subtopology>_<partition>` as in Kafka Streams.

Shared by the topology (which creates tasks), the state layer (task directories, checkpoints) and the
assignment layer (which places tasks), so it lives at the top of the package.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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
        match = _TASK_ID_RE.match(text)
        if match is None:
            raise ValueError(f"not a task id (expected '<subtopology>_<partition>'): {text!r}")
        return cls(int(match.group(1)), int(match.group(2)))

    def java_hash_code(self) -> int:
        """`Objects.hash(subtopology, partition, null)` as a signed 32-bit int (HashSet order emulation)."""
        h = ((31 + self.subtopology) * 31 + self.partition) * 31
        h &= 0xFFFFFFFF
        return h - (1 << 32) if h >= (1 << 31) else h
