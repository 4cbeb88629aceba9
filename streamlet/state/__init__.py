"""Local state: task directories, checkpoints, RocksDB/in-memory stores with caching and change-logging.

Everything here is local (no Kafka I/O): changelog records leave through a sink callable the runtime wires
to its producer, and come back through `ProcessorStateManager.restore_records`.
"""

from streamlet.state.caching_store import CachingKeyValueStore, FlushListener
from streamlet.state.checkpoint import CHECKPOINT_FILE_NAME, OFFSET_UNKNOWN, OffsetCheckpoint
from streamlet.state.logging_store import ChangeLoggingKeyValueStore, ChangelogSink
from streamlet.state.offset_sums import (
    LATEST_OFFSET,
    lock_non_empty_task_dirs,
    sum_of_changelog_offsets,
    task_offset_sums,
)
from streamlet.state.record_cache import RecordCache
from streamlet.state.rocksdb_store import RocksDBStore
from streamlet.state.state_directory import StateDirectory
from streamlet.state.state_manager import ChangelogRecord, ProcessorStateManager
from streamlet.state.store import InMemoryKeyValueStore, KeyValueStore
from streamlet.state.window_store import RocksDBWindowStore

__all__ = [
    "CHECKPOINT_FILE_NAME",
    "LATEST_OFFSET",
    "OFFSET_UNKNOWN",
    "CachingKeyValueStore",
    "ChangeLoggingKeyValueStore",
    "ChangelogRecord",
    "ChangelogSink",
    "FlushListener",
    "InMemoryKeyValueStore",
    "KeyValueStore",
    "OffsetCheckpoint",
    "ProcessorStateManager",
    "RecordCache",
    "RocksDBStore",
    "RocksDBWindowStore",
    "StateDirectory",
    "lock_non_empty_task_dirs",
    "sum_of_changelog_offsets",
    "task_offset_sums",
]
