"""streamlet: stateful stream processing on Apache Kafka for asyncio Python."""

from streamlet.config import StreamsConfig
from streamlet.task_id import TaskId

__all__ = ["StreamsConfig", "TaskId"]
__version__ = "0.1.0"
