"""The bytes a restore batch counts: key + value lengths, tombstones and null keys 0, headers not at all."""

from __future__ import annotations

from types import SimpleNamespace

from streamlet.kafka.record_blocks import RecordBlock
from streamlet.runtime.changelog_reader import record_bytes


def test_a_block_counts_its_key_and_value_columns() -> None:
    block = RecordBlock(
        offsets=[0, 1, 2],
        timestamps=[5, 6, 7],
        keys=[b"alpha", b"be", None],  # 5 + 2 + 0
        values=[b"\x00\x00\x00\x01", None, b"xyz"],  # 4 + 0 (tombstone) + 3
        headers=[(("h", b"ignored"),), (), ()],
    )
    assert record_bytes(block) == 14
    assert record_bytes(block[1:2]) == 2
    assert record_bytes(RecordBlock([], [], [], [])) == 0


def test_record_objects_count_the_same_way() -> None:
    records = [SimpleNamespace(key=b"alpha", value=b"1234"), SimpleNamespace(key=None, value=b"xyz")]
    assert record_bytes(records) == 12
