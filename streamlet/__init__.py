"""streamlet: stateful stream processing on Apache Kafka for asyncio Python."""

from streamlet.app import App
from streamlet.config import StreamsConfig
from streamlet.models import Record
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.session_windows import SessionWindow, SessionWindowedSerde, SessionWindows
from streamlet.sliding_windows import SlidingWindows
from streamlet.task_id import TaskId
from streamlet.topology import StreamsBuilder, Topology
from streamlet.windows import TimeWindow, TimeWindowedSerde, TimeWindows, Windowed

__all__ = [
    "App",
    "KafkaStreams",
    "Record",
    "SessionWindow",
    "SessionWindowedSerde",
    "SessionWindows",
    "SlidingWindows",
    "StreamsBuilder",
    "StreamsConfig",
    "TaskId",
    "TimeWindow",
    "TimeWindowedSerde",
    "TimeWindows",
    "Topology",
    "Windowed",
]
__version__ = "0.1.0"
