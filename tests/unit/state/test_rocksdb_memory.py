"""RocksDB memory settings: per-store defaults, or one bounded cache that memtables are charged to."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from streamlet.config import StreamsConfig
from streamlet.errors import ConfigError
from streamlet.state import rocksdb_memory
from streamlet.state.rocksdb_memory import MIB, RocksDBMemory
from streamlet.state.rocksdb_store import RocksDBStore


@pytest.fixture(autouse=True)
def _restore_defaults() -> Iterator[None]:
    yield
    rocksdb_memory.configure(RocksDBMemory())


def test_bounded_memory_charges_every_store_to_one_cache(tmp_path: Path) -> None:
    rocksdb_memory.configure(RocksDBMemory(bounded_memory_bytes=16 * MIB))
    cache = rocksdb_memory._Shared.cache
    assert cache is not None and cache.get_usage() == 0
    stores = [RocksDBStore(f"s{i}", tmp_path / f"s{i}") for i in range(2)]
    try:
        for store in stores:
            store.put_all([(b"k%07d" % i, b"v" * 100) for i in range(20_000)])
        used = cache.get_usage()
        assert used > 0  # the memtables of both stores are counted in the shared cache
        assert used <= 16 * MIB + 2 * MIB  # within the bound (RocksDB reserves in 1 MiB dummy entries)
        assert stores[1].get(b"k0000042") == b"v" * 100
    finally:
        for store in stores:
            store.close()


def test_the_same_bound_keeps_its_cache_and_a_new_one_replaces_it() -> None:
    rocksdb_memory.configure(RocksDBMemory(bounded_memory_bytes=8 * MIB))
    first = rocksdb_memory._Shared.cache
    rocksdb_memory.configure(RocksDBMemory(bounded_memory_bytes=8 * MIB))
    assert rocksdb_memory._Shared.cache is first
    rocksdb_memory.configure(RocksDBMemory(bounded_memory_bytes=4 * MIB))
    assert rocksdb_memory._Shared.cache is not first
    assert rocksdb_memory.current().bounded_memory_bytes == 4 * MIB


def test_config_checks_the_rocksdb_settings() -> None:
    with pytest.raises(ConfigError, match="rocksdb_write_buffer_bytes"):
        StreamsConfig(application_id="a", rocksdb_write_buffer_bytes=0)
    with pytest.raises(ConfigError, match="rocksdb_bounded_memory_bytes"):
        StreamsConfig(application_id="a", rocksdb_bounded_memory_bytes=-1)
    assert (
        StreamsConfig.from_mapping(
            {"application_id": "a", "rocksdb.bounded.memory.bytes": 1}
        ).rocksdb_bounded_memory_bytes
        == 1
    )
