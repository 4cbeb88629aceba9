"""Restoration's record blocks equal what aiokafka's own decoder reads from the same fetched bytes.

aiokafka is the reference here: every block is compared with the records its `PartitionRecords` yields for the
same buffer, over hand-built and generated batches (keys and values None or not, headers, compression, a fetch
starting inside a batch). Malformed bytes must raise, never read past the buffer.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest
from aiokafka.consumer.fetcher import READ_UNCOMMITTED, PartitionRecords
from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from aiokafka.structs import TopicPartition
from hypothesis import given, settings
from hypothesis import strategies as st

from streamlet import _record_batch
from streamlet.kafka import record_blocks
from streamlet.kafka.record_blocks import RECORD_BLOCKS, RecordBlock
from streamlet.state.rocksdb_store import RocksDBStore

TP = TopicPartition("store-changelog", 1)
GZIP = DefaultRecordBatch.CODEC_GZIP

Record = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes]]]  # timestamp, key, value, headers


def _batch(base_offset: int, records: list[Record], compression: int = 0) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=compression, is_transactional=0, producer_id=-1, producer_epoch=-1,
        base_sequence=-1, batch_size=1 << 24,
    )  # fmt: skip
    for delta, (timestamp, key, value, headers) in enumerate(records):
        builder.append(delta, timestamp=timestamp, key=key, value=value, headers=headers)
    raw = bytearray(builder.build())
    struct.pack_into(">q", raw, 0, base_offset)
    return bytes(raw)


def _partition_records(buffer: bytes, fetch_offset: int, key_deserializer: Any, check_crcs: bool = True) -> list[Any]:
    records = record_blocks._RawMemoryRecords(buffer)
    return list(PartitionRecords(TP, records, [], fetch_offset, key_deserializer, None, check_crcs, READ_UNCOMMITTED))


def _as_tuples(records: Any) -> list[tuple[int, int, bytes | None, bytes | None, tuple[tuple[str, bytes], ...]]]:
    return [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in records]


def _blocks_equal_aiokafka(buffer: bytes, fetch_offset: int) -> list[RecordBlock]:
    blocks = _partition_records(buffer, fetch_offset, RECORD_BLOCKS)
    assert all(isinstance(b, RecordBlock) for b in blocks)
    reference = _partition_records(buffer, fetch_offset, None)
    assert _as_tuples(RecordBlock.concat(blocks)) == _as_tuples(reference) if blocks else reference == []
    return blocks


def test_the_native_decoder_is_built_and_the_fetcher_patched() -> None:
    # CI builds the C extension: a silent fallback to aiokafka's decoder would hide a slow restore
    assert record_blocks.NATIVE
    assert record_blocks.INSTALLED


def test_one_block_per_batch_with_none_keys_values_and_headers() -> None:
    buffer = _batch(0, [(1_000, b"a", b"1", []), (1_001, None, b"2", []), (999, b"c", None, [])]) + _batch(
        3, [(2_000, b"d", b"4", [("v", b"\x03")]), (2_001, b"e", b"", [])]
    )
    blocks = _blocks_equal_aiokafka(buffer, 0)
    assert [len(b) for b in blocks] == [3, 2]
    assert blocks[0].headers is None  # no header anywhere: no per-record tuples
    assert blocks[1].headers == [(("v", b"\x03"),), ()]
    assert blocks[1][0].headers == (("v", b"\x03"),)


def test_a_fetch_starting_inside_a_batch_skips_the_records_before_it() -> None:
    buffer = _batch(10, [(5, b"k%d" % i, b"v", []) for i in range(6)])
    (block,) = _blocks_equal_aiokafka(buffer, 13)
    assert block.offsets == [13, 14, 15]


def test_a_compressed_batch_goes_through_aiokafkas_decoder() -> None:
    buffer = _batch(0, [(7, b"k", b"v" * 100, [("h", b"x")])] * 3, compression=GZIP) + _batch(3, [(8, b"z", b"w", [])])
    assert [len(b) for b in _blocks_equal_aiokafka(buffer, 0)] == [3, 1]


def test_log_append_time_gives_every_record_the_batch_max_timestamp() -> None:
    raw = bytearray(_batch(0, [(100, b"a", b"1", []), (300, b"b", b"2", [])]))
    attributes = struct.unpack_from(">h", raw, 21)[0]
    struct.pack_into(">h", raw, 21, attributes | 0x08)  # the CRC no longer matches: not checked here
    (block,) = _partition_records(bytes(raw), 0, RECORD_BLOCKS, check_crcs=False)
    assert block.timestamps == [300, 300]
    reference = _partition_records(bytes(raw), 0, None, check_crcs=False)
    assert block.timestamps == [r.timestamp for r in reference]


_bytes = st.one_of(st.none(), st.binary(max_size=40))
_record = st.tuples(
    st.integers(0, 2**40), _bytes, _bytes, st.lists(st.tuples(st.text(max_size=5), st.binary(max_size=5)), max_size=2)
)


@settings(max_examples=150, deadline=None)
@given(
    batches=st.lists(st.tuples(st.lists(_record, min_size=1, max_size=8), st.booleans()), min_size=1, max_size=4),
    skip=st.integers(0, 10),
)
def test_generated_batches_decode_as_aiokafka_decodes_them(batches: list[tuple[list[Record], bool]], skip: int) -> None:
    buffer, offset = b"", 0
    for records, compressed in batches:
        buffer += _batch(offset, records, GZIP if compressed else 0)
        offset += len(records)
    _blocks_equal_aiokafka(buffer, min(skip, offset - 1))


@settings(max_examples=300, deadline=None)
@given(cut=st.integers(0, 200), flip=st.integers(0, 200), bit=st.integers(0, 7))
def test_malformed_batches_raise_and_never_read_past_the_buffer(cut: int, flip: int, bit: int) -> None:
    raw = bytearray(_batch(0, [(1, b"key", b"value" * 5, [("h", b"x")]), (2, b"k2", None, [])]))
    if flip < len(raw):
        raw[flip] ^= 1 << bit
    truncated = bytes(raw[: max(0, len(raw) - cut)])
    try:
        _record_batch.decode_batch(truncated, 0, 0)
    except (ValueError, UnicodeDecodeError):
        pass  # a clear error; a read past the buffer would crash the process instead


def test_every_truncation_of_a_batch_is_a_clear_error() -> None:
    raw = _batch(0, [(1, b"key", b"value", [("h", b"x")]), (2, b"k2", None, [])])
    for length in range(len(raw)):
        with pytest.raises(ValueError, match="malformed record batch"):
            _record_batch.decode_batch(raw[:length], 0, 0)


def test_timestamped_values_put_the_timestamp_in_front() -> None:
    block = RecordBlock([0, 1, 2], [1, -1, 2**40], [b"a", b"b", b"c"], [b"x", None, b""])
    expected = [struct.pack(">q", 1) + b"x", None, struct.pack(">q", 2**40)]
    assert block.timestamped_values() == expected


def test_slicing_and_concatenation_keep_columns_aligned() -> None:
    first = RecordBlock([0, 1], [5, 6], [b"a", b"b"], [b"1", b"2"])
    second = RecordBlock([2], [7], [b"c"], [None], [(("h", b"v"),)])
    both = RecordBlock.concat([first, second])
    assert both.headers == [(), (), (("h", b"v"),)]
    assert _as_tuples(both[1:]) == [(1, 6, b"b", b"2", ()), (2, 7, b"c", None, (("h", b"v"),))]
    assert both[-1].offset == 2


@pytest.mark.parametrize("timestamped", [False, True])
def test_a_rocksdb_store_applies_a_block_as_it_applies_records(tmp_path: Any, timestamped: bool) -> None:
    buffer = _batch(0, [(10, b"a", b"1", []), (11, b"b", b"2", []), (12, b"a", None, []), (13, None, b"x", [])])
    (block,) = _partition_records(buffer, 0, RECORD_BLOCKS)
    records = _partition_records(buffer, 0, None)
    contents = []
    for name, source in (("from-block", block), ("from-records", records)):
        store = RocksDBStore(name, tmp_path / name)
        store.apply_changelog_records(source, timestamped=timestamped)
        contents.append(list(store.all()))
        store.close()
    assert contents[0] == contents[1]
    assert [k for k, _ in contents[0]] == [b"b"]
