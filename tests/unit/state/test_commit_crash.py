"""A process killed between any two steps of an exactly-once commit leaves a store that matches its changelog.

The commit sequence of a task under exactly_once_v2 (KIP-892): (1) processing writes the store (uncommitted
writes), (2) the changelog records go into the open Kafka transaction, (3) the transaction commits, (4) the store
writes its uncommitted writes and its changelog offset to RocksDB in one batch. A child process runs that sequence
on real RocksDB, with a file standing in for the committed part of the changelog topic, and dies with `os._exit`
(no close, no flush: as a kill -9) right after a chosen step. The parent then reopens the store and checks that

* it holds exactly the committed changelog replayed up to its own offset: never a value the committed changelog
  does not hold, nor one of a transaction that never committed;
* restoring the committed records after that offset gives the changelog's final state;
* it restores only the records of the transaction whose store write the crash cut off, not the whole changelog.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from aiokafka.structs import TopicPartition

from streamlet.state.state_manager import ProcessorStateManager
from streamlet.task_id import TaskId
from tests.support.changelog import Record

TP = TopicPartition("app-counts-changelog", 0)
STEPS = ("store write", "changelog send", "transaction commit", "offset write")
WRITES_PER_TRANSACTION = 6

CHILD = r"""
import json, os, sys
from pathlib import Path
from aiokafka.structs import TopicPartition
from streamlet.state.state_manager import ProcessorStateManager
from streamlet.task_id import TaskId

task_dir, changelog, crash_round, crash_step = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
tp = TopicPartition("app-counts-changelog", 0)
psm = ProcessorStateManager(TaskId(0, 0), task_dir, {"counts": tp}, transactional=True)
store = psm.register_store("counts")

def step(round_, name):
    if round_ == crash_round and name == crash_step:
        os._exit(9)

next_offset = 0
for round_ in range(3):
    writes = [
        (b"k%d" % ((round_ + i) % 5), None if (round_ + i) % 4 == 3 else b"r%d-%d" % (round_, i))
        for i in range(%(n)d)
    ]
    for key, value in writes:
        store.put(key, value)
    step(round_, "store write")
    in_transaction = list(writes)
    step(round_, "changelog send")
    with open(changelog, "a") as f:
        f.write(json.dumps([[k.hex(), None if v is None else v.hex()] for k, v in in_transaction]) + "\n")
        f.flush()
        os.fsync(f.fileno())
    next_offset += len(in_transaction)
    psm.update_changelog_offsets({tp: next_offset - 1})
    step(round_, "transaction commit")
    psm.commit_stores()
    step(round_, "offset write")
os._exit(0)
""".replace("%(n)d", str(WRITES_PER_TRANSACTION))


def committed_changelog(path: Path) -> list[Record]:
    records: list[Record] = []
    if not path.exists():
        return records
    for line in path.read_text().splitlines():
        for key, value in json.loads(line):
            records.append(Record(len(records), bytes.fromhex(key), None if value is None else bytes.fromhex(value)))
    return records


def replay(records: list[Record]) -> dict[bytes, bytes]:
    state: dict[bytes, bytes] = {}
    for r in records:
        assert r.key is not None
        if r.value is None:
            state.pop(r.key, None)
        else:
            state[r.key] = r.value
    return state


@pytest.mark.parametrize(
    ("crash_round", "crash_step"),
    [(1, step) for step in STEPS] + [(0, "transaction commit")],  # round 0: the store has no offset yet
)
def test_a_crash_after_any_commit_step_leaves_the_store_consistent_with_its_changelog(
    tmp_path: Path, crash_round: int, crash_step: str
) -> None:
    task_dir, changelog = tmp_path / "0_0", tmp_path / "changelog.jsonl"
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(task_dir), str(changelog), str(crash_round), crash_step],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert child.returncode == 9, child.stderr
    records = committed_changelog(changelog)
    committed_transactions = crash_round + (crash_step in ("transaction commit", "offset write"))
    assert len(records) == committed_transactions * WRITES_PER_TRANSACTION

    psm = ProcessorStateManager(TaskId(0, 0), task_dir, {"counts": TP}, transactional=True)
    try:
        store = psm.register_store("counts")
        start = psm.changelog_offsets()[TP]
        assert dict(store.all()) == replay(records[:start])  # nothing uncommitted, nothing missing
        restored = psm.restore_records(TP, records[start:])
        assert dict(store.all()) == replay(records)
        # only the transaction between its commit and the store's is restored; all else was in the store
        assert restored == (WRITES_PER_TRANSACTION if crash_step == "transaction commit" else 0)
    finally:
        psm.close(clean=False)
