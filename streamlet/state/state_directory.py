"""StateDirectory: the on-disk home of one application's local state, laid out like Kafka Streams'.

::

    <state_dir>/<application_id>/            the app dir (rwxr-x---)
        .lock                                held with flock() by the one process using this dir
        kafka-streams-process-metadata       {"processId":"<uuid>"}: this client's stable identity
        <subtopology>_<partition>/           one dir per task
            .checkpoint                      see checkpoint.py
            rocksdb/<store>/                 RocksDB stores

Why each piece exists:

* The process lock makes a second client started on the same directory fail fast, instead of two
  processes corrupting each other's RocksDB files and checkpoints.
* The process id must survive restarts: the assignor uses it to recognise that this client still holds
  warm state for its old tasks (sticky, lag-aware assignment). It only needs to be stable when there is
  state to be sticky about, hence `has_persistent_stores`.
* Task locks are in-memory and owned by a stream thread name (Kafka Streams' `Map<TaskId, Thread>`):
  they stop two threads of this process from opening the same task's stores, and stop the cleaner from
  deleting a directory in use.
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import re
import shutil
import threading
import uuid
from pathlib import Path

from streamlet.errors import StateStoreError, StateStoreLockedError
from streamlet.state.checkpoint import CHECKPOINT_FILE_NAME
from streamlet.task_id import TaskId

log = logging.getLogger(__name__)

LOCK_FILE_NAME = ".lock"
PROCESS_FILE_NAME = "kafka-streams-process-metadata"
#: Owner name the state cleaner uses for the task locks it takes while checking a directory.
CLEANER_OWNER = "state-cleaner"

_TASK_DIR_RE = re.compile(r"^\d+_\d+$")
# Files that do not make a task directory "non-empty": the checkpoint (and its temp file, a leftover of a
# crash during a checkpoint write) and pre-2.8 per-task lock files.
_IGNORED_IN_TASK_DIR = (CHECKPOINT_FILE_NAME, CHECKPOINT_FILE_NAME + ".tmp", LOCK_FILE_NAME)


class StateDirectory:
    """One application's state directory; hold exactly one per process and close it on shutdown."""

    def __init__(
        self,
        state_dir: str | os.PathLike[str],
        application_id: str,
        *,
        has_persistent_stores: bool = True,
    ) -> None:
        if not application_id:
            raise ValueError("application_id must be a non-empty string")
        self.state_dir = Path(state_dir)
        self.application_id = application_id
        self.app_dir = self.state_dir / application_id
        self.has_persistent_stores = has_persistent_stores
        self._guard = threading.Lock()  # protects _task_owners; stream threads may call concurrently
        self._task_owners: dict[TaskId, str] = {}
        self._lock_fd: int | None = None
        self._process_id: uuid.UUID | None = None
        if has_persistent_stores:
            self._create_app_dir()
            self._lock_process()

    # ------------------------------------------------------------------ process-level

    def _create_app_dir(self) -> None:
        try:
            self.state_dir.mkdir(parents=True, exist_ok=True)
            created = not self.app_dir.exists()
            self.app_dir.mkdir(mode=0o750, exist_ok=True)
            if created:
                os.chmod(self.app_dir, 0o750)  # mkdir's mode is filtered by the umask
        except OSError as exc:
            raise StateStoreError(f"cannot create state directory {self.app_dir}: {exc}") from exc

    def _lock_process(self) -> None:
        path = self.app_dir / LOCK_FILE_NAME
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o640)
        except OSError as exc:
            raise StateStoreError(f"cannot open lock file {path}: {exc}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise StateStoreLockedError(
                    f"state directory {self.app_dir} is locked by another streamlet/Kafka Streams client "
                    f"(lock file {path}); each client needs its own state_dir, or stop the other client"
                ) from exc
            raise StateStoreError(f"cannot lock state directory {self.app_dir}: {exc}") from exc
        self._lock_fd = fd

    def process_id(self) -> uuid.UUID:
        """This client's process id, stable across restarts when there are persistent stores.

        Read from `kafka-streams-process-metadata` (Kafka Streams' JSON, unknown fields ignored); created on
        first use; an unreadable file is replaced by a fresh id with a warning, because a client that cannot
        start is worse than one that loses stickiness once.
        """
        if self._process_id is not None:
            return self._process_id
        if not self.has_persistent_stores:
            self._process_id = uuid.uuid4()
            return self._process_id
        path = self.app_dir / PROCESS_FILE_NAME
        if path.exists():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                self._process_id = uuid.UUID(str(data["processId"]))
                return self._process_id
            except (OSError, ValueError, KeyError, TypeError) as exc:
                log.warning("Process metadata file %s is unreadable (%s); generating a new process id", path, exc)
        new_id = uuid.uuid4()
        tmp = path.with_name(path.name + ".tmp")
        try:
            tmp.write_text(json.dumps({"processId": str(new_id)}, separators=(",", ":")), encoding="utf-8")
            os.replace(tmp, path)
        except OSError as exc:
            raise StateStoreError(f"cannot write process metadata file {path}: {exc}") from exc
        self._process_id = new_id
        return new_id

    def close(self) -> None:
        """Release the process lock. In-memory task locks are dropped too: nothing can use them after this."""
        with self._guard:
            self._task_owners.clear()
        if self._lock_fd is not None:
            try:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            finally:
                os.close(self._lock_fd)
                self._lock_fd = None

    def __enter__(self) -> StateDirectory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ task directories

    def task_dir(self, task_id: TaskId) -> Path:
        """`<app_dir>/<task_id>`, created if missing (stores and checkpoints go in it)."""
        path = self.app_dir / str(task_id)
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StateStoreError(f"cannot create task directory {path}: {exc}") from exc
        return path

    def lock_task(self, task_id: TaskId, owner: str) -> bool:
        """Try to take the in-memory lock on a task dir for `owner` (a stream thread name).

        Re-locking by the same owner succeeds; another owner's lock makes this return False.
        """
        with self._guard:
            current = self._task_owners.get(task_id)
            if current is None:
                self._task_owners[task_id] = owner
                return True
            return current == owner

    def unlock_task(self, task_id: TaskId, owner: str) -> None:
        """Release `owner`'s lock; a lock held by someone else (or none) is left alone."""
        with self._guard:
            if self._task_owners.get(task_id) == owner:
                del self._task_owners[task_id]

    def task_owner(self, task_id: TaskId) -> str | None:
        with self._guard:
            return self._task_owners.get(task_id)

    def locked_tasks(self, owner: str) -> set[TaskId]:
        """Tasks `owner` holds; after a rebalance, unlock those it was not assigned."""
        with self._guard:
            return {task for task, who in self._task_owners.items() if who == owner}

    def task_dirs(self) -> list[TaskId]:
        """Every task directory (named `\\d+_\\d+`) in the app dir, sorted."""
        try:
            entries = list(os.scandir(self.app_dir))
        except FileNotFoundError:
            return []
        return sorted(
            TaskId.parse(entry.name)
            for entry in entries
            if _TASK_DIR_RE.match(entry.name) and entry.is_dir(follow_symlinks=False)
        )

    def is_task_dir_empty(self, task_id: TaskId) -> bool:
        """True if the task dir is missing or holds nothing besides the checkpoint (i.e. no store data)."""
        try:
            names = os.listdir(self.app_dir / str(task_id))
        except (FileNotFoundError, NotADirectoryError):
            return True
        return all(name in _IGNORED_IN_TASK_DIR for name in names)

    def non_empty_task_dirs(self) -> list[TaskId]:
        """Task dirs that hold state (anything besides `.checkpoint`): candidates for offset-sum reporting."""
        return [task for task in self.task_dirs() if not self.is_task_dir_empty(task)]

    def clean_removed_tasks(self, now_ms: int, cleanup_delay_ms: int) -> list[TaskId]:
        """Delete unlocked task dirs untouched for longer than `cleanup_delay_ms` (state.cleanup.delay.ms).

        Keeping a revoked task's state for a while lets it come back cheaply (or be reported as warm state in
        the next rebalance); deleting it eventually bounds disk use. A dir locked by any stream thread is in
        use and is skipped. Returns the deleted tasks.
        """
        deleted: list[TaskId] = []
        for task in self.task_dirs():
            if not self.lock_task(task, CLEANER_OWNER):
                continue
            try:
                path = self.app_dir / str(task)
                try:
                    modified_ms = int(path.stat().st_mtime * 1000)
                except FileNotFoundError:
                    continue
                if now_ms > modified_ms + cleanup_delay_ms:
                    log.info(
                        "Deleting obsolete state directory %s (last modified %d ms ago, cleanup delay %d ms)",
                        path,
                        now_ms - modified_ms,
                        cleanup_delay_ms,
                    )
                    shutil.rmtree(path, ignore_errors=False)
                    deleted.append(task)
            except OSError as exc:
                log.warning("Failed to delete obsolete state directory for task %s: %s", task, exc)
            finally:
                self.unlock_task(task, CLEANER_OWNER)
        return deleted

    def cleanup(self) -> None:
        """Wipe all of the app's local state (KafkaStreams#cleanUp), keeping the lock and process id files.

        The process id is kept so the client keeps its identity; everything else (task dirs, global state)
        is restored from the changelogs on the next start. Refuses while any task is locked, i.e. while
        the client is running.
        """
        with self._guard:
            if self._task_owners:
                locked = ", ".join(f"{task} ({owner})" for task, owner in sorted(self._task_owners.items()))
                raise StateStoreError(
                    f"cannot clean up state directory {self.app_dir} while tasks are locked: {locked}; "
                    f"close the client first"
                )
            try:
                entries = list(os.scandir(self.app_dir))
            except FileNotFoundError:
                return
            for entry in entries:
                if entry.name in (LOCK_FILE_NAME, PROCESS_FILE_NAME):
                    continue
                try:
                    if entry.is_dir(follow_symlinks=False):
                        shutil.rmtree(entry.path)
                    else:
                        os.unlink(entry.path)
                except OSError as exc:
                    raise StateStoreError(
                        f"cannot delete {entry.path} while cleaning up {self.app_dir}: {exc}"
                    ) from exc
