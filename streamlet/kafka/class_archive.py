"""An application class-data sharing (AppCDS) archive of Kafka's classes, for the brokers started again and again.

Most of a local broker's start is the JVM loading and verifying Kafka's classes: 2.7 s of CPU of a 3.1 s start on a
2-core machine with the tests' JVM options; mapping them from an archive instead makes it 1.5 s, and the storage
tool's run 1.2 -> 0.8 s. A test run starts about fifty brokers, and the chaos tests restart theirs under load.

Java 17 writes such an archive when a JVM started with `-XX:ArchiveClassesAtExit` exits normally (SIGTERM
included), and later JVMs map it with `-XX:SharedArchiveFile`. The first broker of a (Kafka jars, Java, JVM
options) therefore starts a throwaway broker that writes it (about 5 s, once per cache; `LocalBroker`), and only a
writer seen to exit normally puts its file in place: a JVM killed while writing leaves a file that must not be
mapped. One process at a time writes (a claim file naming it; a claim whose process is gone is taken over); the
others start without the archive meanwhile. A JVM that cannot use an archive (another Java since, say) starts
without it, as `-Xshare:auto` does; `STREAMLET_BROKER_CLASS_ARCHIVE=0` turns the archive off.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

CLASS_ARCHIVE_ENV = "STREAMLET_BROKER_CLASS_ARCHIVE"
# a JVM that exited on its own or on SIGTERM (Java exits with 128 + 15 from its shutdown hooks)
NORMAL_EXITS = (0, 143)
# a claim without a pid yet is being made; one that stays so longer died in the making
_EMPTY_CLAIM_STALE_S = 60.0
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
        self._claim = self.path.with_suffix(".writing")
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
        if not self._claim_it():
            return False
        partial = self.path.with_name(f"{self.path.stem}.{uuid.uuid4().hex[:8]}.partial")
        try:
            returncode = run_writer([f"-XX:ArchiveClassesAtExit={partial}"])
            if returncode in NORMAL_EXITS and partial.is_file() and partial.stat().st_size > 0:
                partial.replace(self.path)
                self._drop_old_archives()
        finally:
            with contextlib.suppress(OSError):
                partial.unlink()
            with contextlib.suppress(OSError):
                self._claim.unlink()
        return self.path.is_file()

    def _drop_old_archives(self) -> None:
        """Keep the newest KEPT_ARCHIVES: an archive of jars, a Java or options no longer used is never mapped again.
        A JVM that mapped a deleted one keeps its mapping."""
        archives = sorted(self.path.parent.glob("*.jsa"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in archives[KEPT_ARCHIVES:]:
            with contextlib.suppress(OSError):
                old.unlink()

    def _claim_it(self) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(2):
            try:
                fd = os.open(self._claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                if not self._claim_is_stale():
                    return False
                with contextlib.suppress(OSError):
                    self._claim.unlink()
                for stale in self.path.parent.glob(f"{self.path.stem}.*.partial"):  # its writer is gone
                    with contextlib.suppress(OSError):
                        stale.unlink()
                continue
            with os.fdopen(fd, "w") as claim:
                claim.write(f"{os.getpid()}\n")
            return True
        return False

    def _claim_is_stale(self) -> bool:
        try:
            text = self._claim.read_text().strip()
            if not text:
                return time.time() - self._claim.stat().st_mtime > _EMPTY_CLAIM_STALE_S
            os.kill(int(text), 0)
        except ProcessLookupError:
            return True
        except (OSError, ValueError):
            return False
        return False


def _stamps(path: Path) -> tuple[str, str]:
    try:
        stat = path.stat()
    except OSError:
        return ("", "")
    return (str(stat.st_size), str(stat.st_mtime_ns))
