"""The KeyValueStore contract on both implementations, and RocksDB specifics (real RocksDB in tmp dirs)."""

from __future__ import annotations

import glob
import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from streamlet.errors import StateStoreCorruptedError, StateStoreError, StateStoreLockedError
from streamlet.state.rocksdb_store import RocksDBStore
from streamlet.state.store import InMemoryKeyValueStore, KeyValueStore, SortedKeyIndex


@pytest.fixture(params=["rocksdb", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[KeyValueStore]:
    s: KeyValueStore
    if request.param == "rocksdb":
        s = RocksDBStore("counts", tmp_path / "rocksdb" / "counts", iteration_chunk=3)
    else:
        s = InMemoryKeyValueStore("counts")
    yield s
    s.close()


def test_protocol(store: KeyValueStore) -> None:
    assert isinstance(store, KeyValueStore)
    assert store.name == "counts"


def test_put_get_delete(store: KeyValueStore) -> None:
    assert store.get(b"a") is None
    store.put(b"a", b"1")
    store.put(b"b", b"")
    assert store.get(b"a") == b"1"
    assert store.get(b"b") == b""  # empty value is a value, not a delete
    store.put(b"a", b"2")
    assert store.get(b"a") == b"2"
    assert store.delete(b"a") == b"2"
    assert store.delete(b"a") is None
    assert store.get(b"a") is None
    store.put(b"b", None)  # put(None) deletes
    assert store.get(b"b") is None


def test_rejects_non_bytes(store: KeyValueStore) -> None:
    with pytest.raises(TypeError):
        store.put("a", b"1")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        store.put(b"a", "1")  # type: ignore[arg-type]


def test_put_all_with_deletes(store: KeyValueStore) -> None:
    store.put(b"gone", b"x")
    store.put_all([(b"k1", b"v1"), (b"k2", b"v2"), (b"gone", None), (b"k1", b"v1b")])
    assert list(store.all()) == [(b"k1", b"v1b"), (b"k2", b"v2")]


def test_range_inclusive_bytewise_and_chunked(store: KeyValueStore) -> None:
    keys = [bytes([i]) + b"k" for i in (0, 1, 2, 127, 128, 200, 255)]
    store.put_all([(k, k.hex().encode()) for k in reversed(keys)])
    assert [k for k, _ in store.all()] == keys  # unsigned byte order, across several scan chunks
    assert [k for k, _ in store.range(b"\x01k", b"\x80k")] == [b"\x01k", b"\x02k", b"\x7fk", b"\x80k"]
    assert [k for k, _ in store.range(b"\x01", b"\x02")] == [b"\x01k"]
    assert [k for k, _ in store.range(None, b"\x01k")] == [b"\x00k", b"\x01k"]
    assert [k for k, _ in store.range(b"\xc8k", None)] == [b"\xc8k", b"\xffk"]
    assert list(store.range(b"\x80", b"\x01")) == []  # from > to


def test_range_prefix_keys(store: KeyValueStore) -> None:
    store.put_all([(b"a", b"1"), (b"a\x00", b"2"), (b"ab", b"3"), (b"b", b"4")])
    assert [k for k, _ in store.range(b"a", b"a")] == [b"a"]
    assert [k for k, _ in store.range(b"a", b"ab")] == [b"a", b"a\x00", b"ab"]


def test_iteration_is_lazy_and_tolerates_writes(store: KeyValueStore) -> None:
    store.put_all([(b"%02d" % i, b"v") for i in range(10)])
    it = store.all()
    first = [next(it) for _ in range(4)]
    store.delete(b"08")
    rest = list(it)
    seen = [k for k, _ in first + rest]
    assert seen[:4] == [b"00", b"01", b"02", b"03"]
    assert b"08" not in seen
    assert seen == sorted(seen)


def test_in_memory_sorted_index_after_mixed_updates() -> None:
    s = InMemoryKeyValueStore("m")
    s.put_all([(b"c", b"1"), (b"a", b"1")])
    assert [k for k, _ in s.all()] == [b"a", b"c"]
    s.delete(b"a")
    s.put(b"b", b"1")
    s.put(b"a", b"2")  # removed then re-added
    s.put(b"a", b"3")
    assert list(s.all()) == [(b"a", b"3"), (b"b", b"1"), (b"c", b"1")]
    assert s.approximate_num_entries() == 3
    assert not s.persistent


@pytest.mark.parametrize("changes_per_scan", [1, 3, 200])  # applied one by one, or by a re-sort
def test_sorted_index_matches_a_sorted_dict_under_removals_and_re_adds(changes_per_scan: int) -> None:
    rng = random.Random(changes_per_scan)
    index, present = SortedKeyIndex(), set()
    for key in (bytes([rng.randrange(256), rng.randrange(256)]) for _ in range(500)):
        if key not in present:
            present.add(key)
            index.added(key)
    for step in range(2_000):
        key = bytes([rng.randrange(256), rng.randrange(256)])
        if key in present:
            present.discard(key)
            index.removed(key)
        else:
            present.add(key)
            index.added(key)
        if step % changes_per_scan == 0:
            low, high = sorted([bytes([rng.randrange(256)]), bytes([rng.randrange(256)])])
            assert index.keys_in_range(present.__contains__, low, high) == sorted(
                k for k in present if low <= k <= high
            )
    assert index.keys_in_range(present.__contains__, None, None) == sorted(present)


def test_approximate_num_entries(store: KeyValueStore) -> None:
    store.put_all([(b"%03d" % i, b"v") for i in range(100)])
    assert 50 <= store.approximate_num_entries() <= 150


# ---------------------------------------------------------------------------------------------- RocksDB


def test_rocksdb_survives_close_and_reopen_after_flush(tmp_path: Path) -> None:
    path = tmp_path / "db"
    s = RocksDBStore("s", path)
    s.put_all([(b"k%d" % i, b"v%d" % i) for i in range(100)])
    s.delete(b"k5")
    s.flush()
    it = s.all()
    next(it)  # an abandoned iterator must not keep the DB (and its LOCK) alive
    s.close()
    s.close()  # idempotent
    reopened = RocksDBStore("s", path)
    assert reopened.get(b"k7") == b"v7"
    assert reopened.get(b"k5") is None
    assert reopened.approximate_num_entries() > 0
    assert reopened.persistent
    reopened.close()


def test_rocksdb_writes_bypass_the_wal(tmp_path: Path) -> None:
    s = RocksDBStore("s", tmp_path / "db")
    s.put(b"a", b"x" * 1000)
    s.put_all([(b"b%d" % i, b"y" * 1000) for i in range(100)])
    s.delete(b"a")
    wal_files = glob.glob(str(tmp_path / "db" / "*.log"))
    assert wal_files and all(os.path.getsize(f) == 0 for f in wal_files)
    s.close()


def test_rocksdb_write_batch_is_one_batch(tmp_path: Path) -> None:
    s = RocksDBStore("s", tmp_path / "db")
    s.write_batch([(b"a", b"1"), (b"b", b"2"), (b"a", None)])
    assert list(s.all()) == [(b"b", b"2")]
    s.write_batch([])  # no-op
    s.close()


def test_rocksdb_second_open_of_same_path_is_locked(tmp_path: Path) -> None:
    s = RocksDBStore("s", tmp_path / "db")
    with pytest.raises(StateStoreLockedError) as info:
        RocksDBStore("s", tmp_path / "db")
    assert str(tmp_path / "db") in str(info.value)
    assert "retry" in str(info.value)
    s.close()


def test_rocksdb_corrupt_store_fails_with_recovery_hint(tmp_path: Path) -> None:
    s = RocksDBStore("s", tmp_path / "db")
    s.put(b"a", b"1")
    s.close()
    (tmp_path / "db" / "CURRENT").write_text("garbage\n")
    with pytest.raises(StateStoreCorruptedError, match="restored from its changelog"):
        RocksDBStore("s", tmp_path / "db")


def test_rocksdb_closed_store_raises(tmp_path: Path) -> None:
    s = RocksDBStore("s", tmp_path / "db")
    s.close()
    with pytest.raises(StateStoreError, match="closed"):
        s.get(b"a")
    with pytest.raises(StateStoreError, match="closed"):
        s.all()


def test_rocksdb_close_during_iteration_raises(tmp_path: Path) -> None:
    s = RocksDBStore("s", tmp_path / "db", iteration_chunk=2)
    s.put_all([(b"%d" % i, b"v") for i in range(5)])
    it = s.all()
    next(it)
    next(it)
    s.close()
    with pytest.raises(StateStoreError, match="closed during iteration"):
        list(it)


def test_rocksdb_wipe_and_destroy(tmp_path: Path) -> None:
    path = tmp_path / "db"
    s = RocksDBStore("s", path)
    s.put(b"a", b"1")
    it = s.all()
    next(it)
    s.wipe()
    assert s.get(b"a") is None and s.is_open
    s.put(b"b", b"2")
    s.destroy()
    assert not path.exists() and not s.is_open


def test_rocksdb_flush_is_what_makes_writes_survive_a_crash(tmp_path: Path) -> None:
    """With the WAL off, a hard exit loses memtable data; flushed data survives."""
    import subprocess
    import sys

    repo_root = Path(__file__).resolve().parents[3]
    script = (
        "import os\n"
        "from streamlet.state.rocksdb_store import RocksDBStore\n"
        f"s = RocksDBStore('s', {str(tmp_path / 'db')!r})\n"
        "s.put(b'flushed', b'1')\n"
        "s.flush()\n"
        "s.put(b'unflushed', b'2')\n"
        "os._exit(0)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(repo_root))
    subprocess.run([sys.executable, "-c", script], check=True, env=env, timeout=60)
    s = RocksDBStore("s", tmp_path / "db")
    assert s.get(b"flushed") == b"1"
    assert s.get(b"unflushed") is None
    s.close()
