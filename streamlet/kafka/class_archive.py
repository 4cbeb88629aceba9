"""An application class-data sharing (AppCDS) archive of Kafka's classes, for the brokers started again and again.

Most of a local broker's start is the JVM loading and verifying Kafka's classes: 2.7 s of CPU of a 3.1 s start on a
2-core machine with the tests' JVM options; mapping them from an archive instead makes it 1.5 s, and the storage
tool's run 1.2 -> 0.8 s. A test run starts about fifty brokers, and the chaos tests restart theirs under load.

Java 17 writes such an archive when a JVM started with `-XX:ArchiveClassesAtExit` exits normally (SIGTERM
included), and later JVMs map it with `-XX:SharedArchiveFile`. The first broker of a (Kafka jars, Java, JVM
options) therefore starts a throwaway broker that writes it (about 5 s, once per cache; `LocalBroker`), and only a
writer seen to exit normally puts its file in place: a JVM killed while writing leaves a file that must not be
mapped. One process at a time writes (a lock file, released by the kernel if that process dies); the others start
without the archive meanwhile. A JVM that cannot use an archive (another Java since, say) starts
without it, as `-Xshare:auto` does; `STREAMLET_BROKER_CLASS_ARCHIVE=0` turns the archive off.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path

CLASS_ARCHIVE_ENV = "STREAMLET_BROKER_CLASS_ARCHIVE"
# a JVM that exited on its own or on SIGTERM (Java exits with 128 + 15 from its shutdown hooks)
NORMAL_EXITS = (0, 143)
# held (flock) by the process writing an archive
_LOCK_FILE = ".writing.lock"
# archives kept in the cache (about 50 MB each): one per Kafka release, Java and JVM options in use
KEPT_ARCHIVES = 6


class ClassArchive:
    """The archive of one set of jars run by one Java with the same JVM options."""

    def __init__(self, cache_dir: Path, libs: Path, java: str, jvm_options: Sequence[str]) -> None:
        digest = hashlib.sha256()
        java_path = Path(java).resolve()
        for part in (str(java_path), *_stamps(java_path.parent.parent / "lib" / "modules"), *jvm_options):
            digest.update(f"{part}\0".encode())
        digest.update(f"{libs.resolve()}\0".encode())
        for jar in sorted(libs.glob("*.jar")):
            digest.update("\0".join((jar.name, *_stamps(jar), "")).encode())
        self.path = cache_dir / f"{digest.hexdigest()[:20]}.jsa"
        self._sharing_off = "-Xshare:off" in jvm_options  # the JVM could neither map nor write an archive

    def enabled(self) -> bool:
        return os.environ.get(CLASS_ARCHIVE_ENV, "1") != "0" and not self._sharing_off

    def options(self) -> list[str]:
        """The JVM options that map the archive, when it exists."""
        return [f"-XX:SharedArchiveFile={self.path}"] if self.enabled() and self.path.is_file() else []

    def missing(self) -> bool:
        return self.enabled() and not self.path.is_file()

    def write(self, run_writer: Callable[[list[str]], int | None]) -> bool:
        """Unless another process is writing it: `run_writer(jvm_options)` runs a JVM with the options that write
        the archive at its exit, and returns the JVM's exit code once it exited. True if the archive is in place."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # one writer at a time, as kafka_libs downloads; the kernel releases the lock of a writer that dies
        with open(self.path.parent / _LOCK_FILE, "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            if self.path.is_file():  # written while this process looked
                return True
            for stale in self.path.parent.glob("*.partial"):  # left by a writer that died
                with contextlib.suppress(OSError):
                    stale.unlink()
            partial = self.path.with_suffix(".partial")
            try:
                returncode = run_writer([f"-XX:ArchiveClassesAtExit={partial}"])
                if returncode in NORMAL_EXITS and partial.is_file() and partial.stat().st_size > 0:
                    partial.replace(self.path)
                    self._drop_old_archives()
            finally:
                with contextlib.suppress(OSError):
                    partial.unlink()
        return self.path.is_file()

    def _drop_old_archives(self) -> None:
        """Keep the newest KEPT_ARCHIVES: an archive of jars, a Java or options no longer used is never mapped again.
        A JVM that mapped a deleted one keeps its mapping."""
        archives = sorted(self.path.parent.glob("*.jsa"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in archives[KEPT_ARCHIVES:]:
            with contextlib.suppress(OSError):
                old.unlink()


def _stamps(path: Path) -> tuple[str, str]:
    try:
        stat = path.stat()
    except OSError:
        return ("", "")
    return (str(stat.st_size), str(stat.st_mtime_ns))
