"""The topology layer: the DSL and `Topology` (sub-topologies, describe(), internal topics).

Pure description, no Kafka I/O. The runtime (`streamlet.runtime`) groups partitions into tasks and
compiles each task's processor graph from it.
"""

from streamlet.topology.branch import Branched
from streamlet.topology.builder import StreamsBuilder
from streamlet.topology.description import TopologyDescription
from streamlet.topology.dsl import (
    KGroupedStream,
    KGroupedTable,
    KStream,
    KTable,
    SessionWindowedKStream,
    TimeWindowedKStream,
)
from streamlet.topology.global_ktable import GlobalKTable
from streamlet.topology.kstream import BranchedKStream
from streamlet.topology.table_joined import TableJoined
from streamlet.topology.topology import InternalTopic, Subtopology, Topology

__all__ = [
    "Branched",
    "BranchedKStream",
    "GlobalKTable",
    "InternalTopic",
    "KGroupedStream",
    "KGroupedTable",
    "KStream",
    "KTable",
    "SessionWindowedKStream",
    "StreamsBuilder",
    "Subtopology",
    "TableJoined",
    "TimeWindowedKStream",
    "Topology",
    "TopologyDescription",
]
