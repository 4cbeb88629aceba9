"""StateDirectory: layout, process lock, process id, task locks, cleaner."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from streamlet.errors import StateStoreError, StateStoreLockedError
from streamlet.state.state_directory import LOCK_FILE_NAME, PROCESS_FILE_NAME, StateDirectory
from streamlet.task_id import TaskId

APP = "streams-wordcount"
REPO_ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def state_dir(tmp_path: Path):
    sd = StateDirectory(tmp_path, APP)
    yield sd
    sd.close()


def test_layout(tmp_path: Path, state_dir: StateDirectory) -> None:
    assert state_dir.app_dir == tmp_path / APP
    assert (tmp_path / APP / LOCK_FILE_NAME).is_file()
    assert (tmp_path / APP).stat().st_mode & 0o777 == 0o750
    path = state_dir.task_dir(TaskId(1, 3))
    assert path == tmp_path / APP / "1_3" and path.is_dir()


def test_process_id_is_stable_across_instances(tmp_path: Path) -> None:
    with StateDirectory(tmp_path, APP) as sd:
        first = sd.process_id()
        assert sd.process_id() == first
    data = json.loads((tmp_path / APP / PROCESS_FILE_NAME).read_text())
    assert data == {"processId": str(first)}
    with StateDirectory(tmp_path, APP) as sd:
        assert sd.process_id() == first


def test_process_id_read_from_kafka_streams_file(tmp_path: Path) -> None:
    (tmp_path / APP).mkdir()
    # As written by Kafka Streams (Jackson); unknown fields are ignored.
    (tmp_path / APP / PROCESS_FILE_NAME).write_text('{"processId":"4b61083e-57d0-457d-951f-d06556c148ca","newField":1}')
    with StateDirectory(tmp_path, APP) as sd:
        assert sd.process_id() == uuid.UUID("4b61083e-57d0-457d-951f-d06556c148ca")


def test_unreadable_process_file_is_replaced(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / APP).mkdir()
    (tmp_path / APP / PROCESS_FILE_NAME).write_text("{not json")
    with StateDirectory(tmp_path, APP) as sd:
        new = sd.process_id()
    assert "unreadable" in caplog.text
    with StateDirectory(tmp_path, APP) as sd:
        assert sd.process_id() == new


def test_without_persistent_stores_process_id_is_random_and_nothing_is_written(tmp_path: Path) -> None:
    a = StateDirectory(tmp_path, APP, has_persistent_stores=False)
    b = StateDirectory(tmp_path, APP, has_persistent_stores=False)  # no process lock either
    assert a.process_id() != b.process_id()
    assert not (tmp_path / APP).exists()
    a.close()
    b.close()


def test_second_instance_in_same_process_is_refused(tmp_path: Path, state_dir: StateDirectory) -> None:
    with pytest.raises(StateStoreLockedError, match="locked by another"):
        StateDirectory(tmp_path, APP)


def test_second_process_holding_the_lock_is_refused(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from streamlet.state.state_directory import StateDirectory\n"
        f"sd = StateDirectory({str(tmp_path)!r}, {APP!r})\n"
        "print('locked', flush=True)\n"
        "sys.stdin.read()\n"
        "sd.close()\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    child = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "locked"
        with pytest.raises(StateStoreLockedError) as info:
            StateDirectory(tmp_path, APP)
        assert str(tmp_path / APP) in str(info.value)
        assert "another" in str(info.value)
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=30)
    # Released when the other process is gone.
    StateDirectory(tmp_path, APP).close()


def test_close_releases_the_process_lock(tmp_path: Path) -> None:
    StateDirectory(tmp_path, APP).close()
    StateDirectory(tmp_path, APP).close()


def test_task_locks_are_per_owner(state_dir: StateDirectory) -> None:
    t = TaskId(0, 1)
    assert state_dir.lock_task(t, "thread-1")
    assert state_dir.lock_task(t, "thread-1")  # re-lock by the same owner
    assert not state_dir.lock_task(t, "thread-2")
    state_dir.unlock_task(t, "thread-2")  # not the owner: no effect
    assert state_dir.task_owner(t) == "thread-1"
    assert state_dir.locked_tasks("thread-1") == {t}
    state_dir.unlock_task(t, "thread-1")
    assert state_dir.lock_task(t, "thread-2")


def test_non_empty_task_dirs(tmp_path: Path, state_dir: StateDirectory) -> None:
    only_checkpoint = state_dir.task_dir(TaskId(0, 0))
    (only_checkpoint / ".checkpoint").write_text("0\n0\n")
    state_dir.task_dir(TaskId(0, 1))  # empty
    with_store = state_dir.task_dir(TaskId(1, 2))
    (with_store / "rocksdb" / "counts").mkdir(parents=True)
    (tmp_path / APP / "not-a-task").mkdir()
    (tmp_path / APP / "2_x").mkdir()
    (tmp_path / APP / "3_3").write_text("a file, not a dir")
    assert state_dir.task_dirs() == [TaskId(0, 0), TaskId(0, 1), TaskId(1, 2)]
    assert state_dir.non_empty_task_dirs() == [TaskId(1, 2)]


def _age(path: Path, seconds: float) -> None:
    past = time.time() - seconds
    os.utime(path, (past, past))


def test_clean_removed_tasks_respects_delay_and_locks(state_dir: StateDirectory) -> None:
    old = state_dir.task_dir(TaskId(0, 0))
    (old / "data").write_text("x")
    _age(old, 120)
    old_locked = state_dir.task_dir(TaskId(0, 1))
    _age(old_locked, 120)
    assert state_dir.lock_task(TaskId(0, 1), "thread-1")
    recent = state_dir.task_dir(TaskId(0, 2))
    _age(recent, 10)

    now_ms = int(time.time() * 1000)
    deleted = state_dir.clean_removed_tasks(now_ms, cleanup_delay_ms=60_000)
    assert deleted == [TaskId(0, 0)]
    assert not old.exists() and old_locked.exists() and recent.exists()
    assert state_dir.task_owner(TaskId(0, 1)) == "thread-1"  # the cleaner did not steal the lock
    assert state_dir.task_owner(TaskId(0, 2)) is None  # nor keep its own


def test_cleanup_wipes_state_but_keeps_process_id(tmp_path: Path, state_dir: StateDirectory) -> None:
    pid = state_dir.process_id()
    (state_dir.task_dir(TaskId(0, 0)) / "data").write_text("x")
    (tmp_path / APP / "global").mkdir()
    state_dir.lock_task(TaskId(0, 0), "thread-1")
    with pytest.raises(StateStoreError, match="locked"):
        state_dir.cleanup()
    assert (tmp_path / APP / "0_0").exists()
    state_dir.unlock_task(TaskId(0, 0), "thread-1")
    state_dir.cleanup()
    assert sorted(p.name for p in (tmp_path / APP).iterdir()) == sorted([LOCK_FILE_NAME, PROCESS_FILE_NAME])
    assert state_dir.process_id() == pid
    state_dir.close()
    with StateDirectory(tmp_path, APP) as again:
        assert again.process_id() == pid
