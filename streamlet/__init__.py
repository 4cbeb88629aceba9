"""streamlet: stateful stream processing on Apache Kafka for asyncio Python."""

from streamlet import _compiled

_compiled.install()  # before any other module: a stale or unwanted mypyc build is not imported

from streamlet.app import App  # noqa: E402
from streamlet.config import StreamsConfig
from streamlet.models import Record
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.runtime.processor_context import ProcessorContext
from streamlet.runtime.punctuation import Cancellable, PunctuationType
from streamlet.task_id import TaskId
from streamlet.topology import Branched, StreamsBuilder, TableJoined, Topology
from streamlet.topology.join_windows import JoinWindows, StreamJoined
from streamlet.topology.session_windows import SessionWindow, SessionWindowedSerde, SessionWindows
from streamlet.topology.sliding_windows import SlidingWindows
from streamlet.topology.suppressed import BufferConfig, Suppressed
from streamlet.topology.windows import TimeWindow, TimeWindowedSerde, TimeWindows, Windowed

__all__ = [
    "App",
    "BufferConfig",
    "Cancellable",
    "Branched",
    "JoinWindows",
    "KafkaStreams",
    "ProcessorContext",
    "PunctuationType",
    "Record",
    "SessionWindow",
    "SessionWindowedSerde",
    "SessionWindows",
    "SlidingWindows",
    "StreamJoined",
    "StreamsBuilder",
    "StreamsConfig",
    "Suppressed",
    "TableJoined",
    "TaskId",
    "TimeWindow",
    "TimeWindowedSerde",
    "TimeWindows",
    "Topology",
    "Windowed",
]
__version__ = "0.1.0"
