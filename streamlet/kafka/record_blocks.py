"""Changelog records as columns: restoration's fetch path.

Restoring a store reads four fields of each record (offset, timestamp, key, value) and writes them into a
RocksDB batch. aiokafka decodes every record into an object and then yields them one by one from a Python
generator; on a large changelog that was half of restoration's time (bench/README.md). A consumer whose
key deserializer is `RECORD_BLOCKS` instead gets one `RecordBlock` per record batch: lists of offsets,
timestamps, keys and values decoded by `streamlet._record_batch` (C) straight from the fetched bytes.

aiokafka keeps deciding everything about a batch (CRC, aborted transactions, control batches); only the
decoding of an uncompressed v2 batch's records is replaced. A compressed or legacy batch, or an install
without the C extension, becomes a block through aiokafka's own decoder. This patches two names of
aiokafka's fetcher (pinned to aiokafka 0.14), leaving every other consumer as it was.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, overload

from aiokafka import AIOKafkaConsumer
from aiokafka import errors as kafka_errors
from aiokafka.consumer import fetcher as _fetcher
from aiokafka.structs import TopicPartition

from streamlet.kafka.aiokafka_internals import version_supported
from streamlet.kafka.native_modules import load_native

if TYPE_CHECKING:
    import streamlet._record_batch as _native
else:  # None without a C compiler or with a stale build: aiokafka's decoder fills the blocks
    _native = load_native("streamlet._record_batch", "record_batch.c")

NATIVE = _native is not None
_LENGTH = struct.Struct(">i")
_TIMESTAMP = struct.Struct(">q")


class BlockRecord(NamedTuple):
    """One record of a block, for the readers that want records (error messages, buffers, window stores)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: Sequence[tuple[str, bytes]]


class RecordBlock(Sequence[BlockRecord]):
    """Consecutive records of one partition, column by column (headers only when some record has any)."""

    __slots__ = ("offsets", "timestamps", "keys", "values", "headers")

    def __init__(
        self,
        offsets: list[int],
        timestamps: list[int],
        keys: list[bytes | None],
        values: list[bytes | None],
        headers: list[tuple[tuple[str, bytes], ...]] | None = None,
    ) -> None:
        self.offsets = offsets
        self.timestamps = timestamps
        self.keys = keys
        self.values = values
        self.headers = headers

    @classmethod
    def concat(cls, blocks: Sequence[RecordBlock]) -> RecordBlock:
        if len(blocks) == 1:
            return blocks[0]
        merged = cls([], [], [], [], None)
        if any(b.headers is not None for b in blocks):
            merged.headers = []
        for block in blocks:
            merged.offsets += block.offsets
            merged.timestamps += block.timestamps
            merged.keys += block.keys
            merged.values += block.values
            if merged.headers is not None:
                merged.headers += block.headers if block.headers is not None else [()] * len(block.keys)
        return merged

    @classmethod
    def from_records(cls, records: Iterable[Any]) -> RecordBlock:
        """A block of record objects (`.offset`, `.timestamp`, `.key`, `.value`), e.g. `ConsumerRecord`s."""
        block = cls([], [], [], [], None)
        for record in records:
            block.offsets.append(record.offset)
            block.timestamps.append(record.timestamp)
            block.keys.append(record.key)
            block.values.append(record.value)
        return block

    def __len__(self) -> int:
        return len(self.offsets)

    @overload
    def __getitem__(self, index: int) -> BlockRecord: ...

    @overload
    def __getitem__(self, index: slice) -> RecordBlock: ...

    def __getitem__(self, index: int | slice) -> BlockRecord | RecordBlock:
        if isinstance(index, slice):
            return RecordBlock(
                self.offsets[index],
                self.timestamps[index],
                self.keys[index],
                self.values[index],
                None if self.headers is None else self.headers[index],
            )
        headers = () if self.headers is None else self.headers[index]
        return BlockRecord(self.offsets[index], self.timestamps[index], self.keys[index], self.values[index], headers)

    def __iter__(self) -> Iterator[BlockRecord]:
        headers = self.headers if self.headers is not None else [()] * len(self.offsets)
        return map(BlockRecord._make, zip(self.offsets, self.timestamps, self.keys, self.values, headers, strict=True))

    def timestamped_values(self) -> list[bytes | None]:
        """Each value behind its record's 8-byte timestamp (a timestamped store's format); None stays None."""
        if _native is not None:
            return _native.timestamped_values(self.timestamps, self.values)
        pack = _TIMESTAMP.pack
        return [None if v is None else pack(t) + v for t, v in zip(self.timestamps, self.values, strict=True)]


def _identity(data: bytes | None) -> bytes | None:
    return data


#: pass as `key_deserializer` to get one `RecordBlock` per record batch from `getmany()`
RECORD_BLOCKS = _identity


class _RawMemoryRecords(_fetcher.MemoryRecords):  # type: ignore[misc, name-defined]
    """aiokafka's `MemoryRecords`, keeping the fetched bytes for the native decoder."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.raw = data


def _block_from_aiokafka(batch: Any, min_offset: int) -> RecordBlock:
    kept = [record for record in batch if record.offset >= min_offset]
    block = RecordBlock.from_records(kept)
    headers = [tuple(record.headers) for record in kept]
    if any(headers):
        block.headers = headers
    return block


def kept_batches(self: Any) -> Iterator[tuple[Any, bytes | None, int]]:
    """The batches of aiokafka's `PartitionRecords` whose records are to be read, after aiokafka's own checks
    (CRC, aborted transactions, control batches: `next_fetch_offset` moves past the skipped ones), each with the
    fetched bytes and where it starts in them when the native decoder can read it (an uncompressed v2 batch),
    else None and 0: then aiokafka's decoder reads it."""
    tp = self._tp
    records = self._records
    raw: bytes | None = getattr(records, "raw", None) if _native is not None else None
    position = 0  # where the next batch starts in `raw`
    while records.has_next():
        batch = records.next_batch()
        start = position
        if raw is not None:
            position += 12 + _LENGTH.unpack_from(raw, start + 8)[0]
        if self._check_crcs and not batch.validate_crc():
            raise kafka_errors.CorruptRecordException(f"Invalid CRC - {tp}")
        if self._isolation_level == _fetcher.READ_COMMITTED and batch.producer_id is not None:
            self._consume_aborted_up_to(batch.base_offset)
            if batch.is_control_batch and self._contains_abort_marker(batch):
                self._aborted_producers.discard(batch.producer_id)
            if batch.is_transactional and batch.producer_id in self._aborted_producers:
                self.next_fetch_offset = batch.next_offset
                continue
        if batch.is_control_batch:
            self.next_fetch_offset = batch.next_offset
            continue
        if raw is not None and batch.magic == 2 and batch.compression_type == 0:
            yield batch, raw, start
        else:
            yield batch, None, 0


def _unpack_blocks(self: Any) -> Iterator[RecordBlock]:
    """aiokafka's `PartitionRecords._unpack_records`, yielding one block per batch instead of each record."""
    for batch, raw, start in kept_batches(self):
        if raw is not None:
            block = RecordBlock(*_native.decode_batch(raw, start, self.next_fetch_offset))
        else:
            block = _block_from_aiokafka(batch, self.next_fetch_offset)
        self.next_fetch_offset = batch.next_offset
        if block.offsets:
            yield block


def _install() -> bool:
    if not version_supported():
        return False
    records_class: Any = getattr(_fetcher, "PartitionRecords", None)
    original_init = getattr(records_class, "__init__", None)
    if original_init is None or not hasattr(records_class, "_unpack_records"):
        return False
    if getattr(original_init, "_streamlet_blocks", False):
        return True

    def __init__(self: Any, tp: TopicPartition, records: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, tp, records, *args, **kwargs)
        if self._key_deserializer is RECORD_BLOCKS:
            self._records_iterator = _unpack_blocks(self)

    __init__._streamlet_blocks = True  # type: ignore[attr-defined]
    records_class.__init__ = __init__
    _fetcher.MemoryRecords = _RawMemoryRecords
    return True


#: False when this aiokafka's fetcher cannot be patched (then a RECORD_BLOCKS consumer yields records)
INSTALLED = _install()


class BlockRestoreConsumer(AIOKafkaConsumer):
    """A restore consumer whose `getmany` returns one `RecordBlock` per partition.

    aiokafka counts `max_records` in blocks here, so the records bound is kept by taking one block at a time
    until the budget is reached (each block is one batch: a few thousand records at most).
    """

    def __init__(self, **config: Any) -> None:
        super().__init__(key_deserializer=RECORD_BLOCKS, **config)

    async def getmany(  # type: ignore[override]
        self, *partitions: TopicPartition, timeout_ms: int = 0, max_records: int | None = None
    ) -> dict[TopicPartition, Sequence[Any]]:
        if not INSTALLED:
            return await super().getmany(*partitions, timeout_ms=timeout_ms, max_records=max_records)
        step = None if max_records is None else 1
        fetched: dict[TopicPartition, list[RecordBlock]] = {}
        count = 0
        data = await super().getmany(*partitions, timeout_ms=timeout_ms, max_records=step)
        while data:
            for tp, blocks in data.items():
                fetched.setdefault(tp, []).extend(blocks)
                count += sum(len(b) for b in blocks)
            if max_records is None or count >= max_records:
                break
            data = await super().getmany(*partitions, timeout_ms=0, max_records=step)
        return {tp: RecordBlock.concat(blocks) for tp, blocks in fetched.items()}
