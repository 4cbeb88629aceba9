"""How much memory the RocksDB stores of this process may use (Kafka Streams' RocksDBConfigSetter settings).

Kafka Streams gives each store its own block cache and memtables, so a client's RocksDB memory grows with its
number of stores; its documented fix (`BoundedMemoryRocksDBConfig`) shares one LRU cache among every store of
the process and charges the memtables to it through a write buffer manager. streamlet offers both:

* per store (the default): a `rocksdb_block_cache_bytes` block cache and up to `rocksdb_max_write_buffers`
  memtables of `rocksdb_write_buffer_bytes` each;
* bounded (`rocksdb_bounded_memory_bytes` > 0): one cache of that size for every store in the process, with
  memtables, index and filter blocks all counted in it.

The setting is per process, as Kafka Streams' static cache is: `KafkaStreams.start()` applies its config, and
stores opened afterwards use it.
"""

from __future__ import annotations

from dataclasses import dataclass

from rocksdict import BlockBasedOptions, Cache, Options, WriteBufferManager

MIB = 1024 * 1024


@dataclass(frozen=True)
class RocksDBMemory:
    block_cache_bytes: int = 50 * MIB  # Kafka Streams' BLOCK_CACHE_SIZE per store
    write_buffer_bytes: int = 16 * MIB  # Kafka Streams' WRITE_BUFFER_SIZE
    max_write_buffers: int = 3  # Kafka Streams' WRITE_BUFFER_NUMBER
    bounded_memory_bytes: int = 0  # 0: per store; else one cache shared by every store of the process


class _Shared:
    """The process-wide settings and, when bounded, the one cache and write buffer manager."""

    memory = RocksDBMemory()
    cache: Cache | None = None
    write_buffer_manager: WriteBufferManager | None = None


def configure(memory: RocksDBMemory) -> None:
    """Use `memory` for stores opened from now on (a bounded cache is created once per size)."""
    if memory.bounded_memory_bytes and (
        _Shared.cache is None or _Shared.memory.bounded_memory_bytes != memory.bounded_memory_bytes
    ):
        _Shared.cache = Cache(memory.bounded_memory_bytes)
        # memtables count against the cache; allow_stall=False: writes never block on memory (RocksDB flushes)
        _Shared.write_buffer_manager = WriteBufferManager.new_write_buffer_manager_with_cache(
            memory.bounded_memory_bytes // 2, False, _Shared.cache
        )
    _Shared.memory = memory


def current() -> RocksDBMemory:
    return _Shared.memory


def apply(opts: Options) -> None:
    """Set the memory options of one store's database."""
    memory = _Shared.memory
    table = BlockBasedOptions()
    opts.set_write_buffer_size(memory.write_buffer_bytes)
    opts.set_max_write_buffer_number(memory.max_write_buffers)
    if memory.bounded_memory_bytes and _Shared.cache is not None and _Shared.write_buffer_manager is not None:
        table.set_block_cache(_Shared.cache)
        table.set_cache_index_and_filter_blocks(True)
        table.set_pin_l0_filter_and_index_blocks_in_cache(True)
        opts.set_write_buffer_manager(_Shared.write_buffer_manager)
    else:
        table.set_block_cache(Cache(memory.block_cache_bytes))
    opts.set_block_based_table_factory(table)
