"""GlobalStateManager on real RocksDB: records applied as a global table's source applies them, the global
checkpoint (next offsets) written and resumed from, and a missing or corrupt checkpoint starting over."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from aiokafka.structs import TopicPartition

from streamlet.state import timestamped
from streamlet.state.checkpoint import OffsetCheckpoint
from streamlet.state.global_state_manager import GlobalStateManager

TP0 = TopicPartition("customers", 0)
TP1 = TopicPartition("customers", 1)


class Record(NamedTuple):
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int


def _contents(manager: GlobalStateManager) -> dict[bytes, tuple[bytes, int]]:
    store = manager.stores["customers"]
    return {k: (timestamped.value_of(v), timestamped.timestamp_of(v)) for k, v in store.all()}


def _manager(app_dir: Path, chunk_records: int = 2) -> GlobalStateManager:
    return GlobalStateManager(app_dir, {"customers": "customers"}, chunk_records=chunk_records)


def test_records_update_delete_and_skip_null_keys(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    records = [Record(0, b"a", b"x", 5), Record(1, b"b", b"y", 6), Record(2, None, b"z", 7), Record(3, b"a", None, 8)]
    manager.apply(TP0, records)
    manager.apply(TP1, [Record(7, b"c", b"w", 1)])
    assert _contents(manager) == {b"b": (b"y", 6), b"c": (b"w", 1)}
    assert manager.offsets() == {TP0: 4, TP1: 8}
    manager.advance(TP1, 10)  # past a transaction marker
    manager.advance(TP0, 2)  # never backwards
    assert manager.offsets() == {TP0: 4, TP1: 10}
    manager.close(clean=True)


def test_a_clean_close_checkpoints_and_a_reopen_resumes(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    manager.apply(TP0, [Record(0, b"a", b"x", 5)])
    manager.close(clean=True)
    assert OffsetCheckpoint(tmp_path / "global" / ".checkpoint").read() == {TP0: 1}
    reopened = _manager(tmp_path)
    assert reopened.checkpointed_offset(TP0) == 1 and reopened.checkpointed_offset(TP1) is None
    assert _contents(reopened) == {b"a": (b"x", 5)}
    reopened.close(clean=False)


def test_without_a_valid_checkpoint_the_stores_start_empty(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    manager.apply(TP0, [Record(0, b"a", b"x", 5)])
    manager.close(clean=False)  # data on disk, no checkpoint: it may miss compacted-away tombstones
    reopened = _manager(tmp_path)
    assert _contents(reopened) == {} and reopened.offsets() == {}
    reopened.apply(TP0, [Record(0, b"a", b"x", 5)])
    reopened.close(clean=True)
    checkpoint = tmp_path / "global" / ".checkpoint"
    checkpoint.write_text("0\n1\ncustomers zero 1\n")
    corrupt = _manager(tmp_path)
    assert _contents(corrupt) == {} and corrupt.checkpointed_offset(TP0) is None
    assert not checkpoint.exists()
    corrupt.close(clean=False)
