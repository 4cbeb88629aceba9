"""The caching store's fused read-modify-write (`RecordCache.replace_dirty`) changes nothing observable.

The reference is the same stack whose cache never takes the fused path: random operations on two namespaces
of one small cache (so evictions happen, including writes to a namespace while another one overfilled the
cache) must give the same flushes, downstream emissions, store contents, sizes and eviction counts.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from streamlet.state.caching_store import CachingKeyValueStore
from streamlet.state.record_cache import NamedCache, RecordCache
from streamlet.state.store import InMemoryKeyValueStore


class UnfusedRecordCache(RecordCache):
    def replace_dirty(self, cache: NamedCache, key: bytes, value: bytes | None) -> bool:
        return False


_op = st.tuples(
    st.sampled_from(["rmw"] * 6 + ["put", "delete", "get", "flush"]),  # mostly aggregation updates
    st.integers(0, 1),  # namespace
    st.integers(0, 6),  # key
    st.integers(0, 3),  # value length class: most writes keep the length, some change it
)


def _run(cache: RecordCache, ops: list[tuple[str, int, int, int]]) -> tuple[object, ...]:
    emitted: list[tuple[int, bytes, bytes | None, bytes | None]] = []
    stores = []
    for ns in (0, 1):
        store = CachingKeyValueStore(InMemoryKeyValueStore(f"s{ns}"), cache, f"0_0-s{ns}")
        store.set_flush_listener(lambda k, new, old, ns=ns: emitted.append((ns, k, new, old)))
        stores.append(store)
    for op, ns, k, length in ops:
        store, key = stores[ns], b"k%d" % k
        if op == "rmw":  # an aggregation's update: read, then write a value of (usually) the same length
            old = store.get(key)
            n = 0 if old is None else old[0]
            store.put(key, bytes([(n + 1) % 256]) * (8 if length else 4))
        elif op == "put":
            store.put(key, b"v" * (length * 5 + 1))
        elif op == "delete":
            store.delete(key)
        elif op == "get":
            store.get(key)
        else:
            store.flush_cache()
    contents = [list(s.inner.all()) for s in stores]
    return emitted, contents, cache.size_bytes, cache.num_evictions


@settings(max_examples=500, deadline=None)
@given(ops=st.lists(_op, max_size=80), max_bytes=st.sampled_from([0, 150, 400, 10_000]))
def test_the_fused_write_is_the_plain_write(ops: list[tuple[str, int, int, int]], max_bytes: int) -> None:
    assert _run(RecordCache(max_bytes), ops) == _run(UnfusedRecordCache(max_bytes), ops)


def test_a_same_length_update_takes_the_fused_path() -> None:
    cache = RecordCache(10_000)
    store = CachingKeyValueStore(InMemoryKeyValueStore("s"), cache, "0_0-s")
    store.put(b"k", b"\x00" * 8)
    size = cache.size_bytes
    named = cache._cache("0_0-s")
    assert cache.replace_dirty(named, b"k", b"\x01" * 8)
    assert not cache.replace_dirty(named, b"k", b"\x01" * 9)  # a new length: the plain put keeps the sizes
    assert not cache.replace_dirty(named, b"absent", b"\x01" * 8)
    assert cache.size_bytes == size and store.get(b"k") == b"\x01" * 8
