"""The topology layer: DSL, `Topology` (sub-topologies, describe(), internal topics), partition grouper,
and the executable per-task processor graph. Pure code: no Kafka I/O."""

from streamlet.topology.builder import KGroupedStream, KStream, KTable, StreamsBuilder
from streamlet.topology.description import TopologyDescription
from streamlet.topology.grouper import PartitionGrouper, group_partitions
from streamlet.topology.processors import (
    RecordDeserializationError,
    StateStore,
    TaskContext,
    TaskProcessorGraph,
)
from streamlet.topology.topology import InternalTopic, Subtopology, Topology

__all__ = [
    "InternalTopic",
    "KGroupedStream",
    "KStream",
    "KTable",
    "PartitionGrouper",
    "RecordDeserializationError",
    "StateStore",
    "StreamsBuilder",
    "Subtopology",
    "TaskContext",
    "TaskProcessorGraph",
    "Topology",
    "TopologyDescription",
    "group_partitions",
]
