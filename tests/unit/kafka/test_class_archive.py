"""ClassArchive without a JVM: which options a broker gets, who writes the archive, and what a failed writer leaves."""

from __future__ import annotations

import fcntl
import os
import sys
from pathlib import Path

import pytest

from streamlet.kafka.class_archive import CLASS_ARCHIVE_ENV, KEPT_ARCHIVES, ClassArchive

OPTIONS = ["-Xmx512m", "-XX:+UseSerialGC"]


@pytest.fixture
def libs(tmp_path: Path) -> Path:
    libs = tmp_path / "libs"
    libs.mkdir()
    (libs / "kafka_2.13-4.4.0.jar").write_bytes(b"jar")
    return libs


def _archive(tmp_path: Path, libs: Path, options: list[str] = OPTIONS) -> ClassArchive:
    return ClassArchive(tmp_path / "archives", libs, sys.executable, options)


def _writer(returncode: int | None, seen: list[list[str]]):
    def run(options: list[str]) -> int | None:
        seen.append(options)
        [option] = options
        Path(option.removeprefix("-XX:ArchiveClassesAtExit=")).write_bytes(b"classes")
        return returncode

    return run


def _files(archive: ClassArchive) -> list[str]:
    """The cache's files but the writers' lock, which stays."""
    return sorted(p.name for p in archive.path.parent.iterdir() if p.name != ".writing.lock")


def test_a_written_archive_is_mapped_by_the_next_jvms(tmp_path: Path, libs: Path) -> None:
    archive = _archive(tmp_path, libs)
    assert archive.missing() and archive.options() == []
    seen: list[list[str]] = []
    assert archive.write(_writer(143, seen))  # SIGTERM's exit: the archive is complete
    [[option]] = seen
    assert option.startswith("-XX:ArchiveClassesAtExit=") and option.endswith(".partial")
    assert not archive.missing() and archive.options() == [f"-XX:SharedArchiveFile={archive.path}"]
    assert _files(archive) == [archive.path.name]  # no partial left


@pytest.mark.parametrize("returncode", [-9, 1, None])
def test_a_writer_that_did_not_exit_normally_leaves_nothing(tmp_path: Path, libs: Path, returncode: int | None) -> None:
    archive = _archive(tmp_path, libs)
    assert not archive.write(_writer(returncode, []))
    assert archive.missing() and _files(archive) == []


def test_one_process_writes_at_a_time_and_a_dead_writers_partial_file_goes(tmp_path: Path, libs: Path) -> None:
    archive = _archive(tmp_path, libs)
    archive.path.parent.mkdir(parents=True)
    seen: list[list[str]] = []
    with open(archive.path.parent / ".writing.lock", "w") as other_writer:
        fcntl.flock(other_writer, fcntl.LOCK_EX)  # another open file: another writer, as far as flock goes
        assert not archive.write(_writer(0, seen)) and seen == []

    left = archive.path.with_suffix(".partial")  # its writer died while its JVM wrote
    left.write_bytes(b"half an archive")
    (archive.path.parent / "another.partial").write_bytes(b"half another archive")
    assert archive.write(_writer(0, seen)) and len(seen) == 1
    assert _files(archive) == [archive.path.name]


def test_the_archive_belongs_to_its_jars_and_options(tmp_path: Path, libs: Path) -> None:
    first = _archive(tmp_path, libs).path
    assert _archive(tmp_path, libs).path == first
    assert _archive(tmp_path, libs, ["-Xmx1g", "-XX:+UseSerialGC"]).path != first
    (libs / "kafka-clients-4.4.0.jar").write_bytes(b"another jar")
    assert _archive(tmp_path, libs).path != first


def test_the_environment_turns_it_off(tmp_path: Path, libs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = _archive(tmp_path, libs)
    assert archive.write(_writer(0, []))
    monkeypatch.setenv(CLASS_ARCHIVE_ENV, "0")
    assert archive.options() == [] and not archive.missing()


def test_jvms_without_class_sharing_neither_map_nor_write_one(tmp_path: Path, libs: Path) -> None:
    archive = _archive(tmp_path, libs, [*OPTIONS, "-Xshare:off"])
    assert archive.options() == [] and not archive.missing()


def test_the_cache_keeps_the_newest_archives(tmp_path: Path, libs: Path) -> None:
    cache = tmp_path / "archives"
    cache.mkdir()
    old = [cache / f"old-{i}.jsa" for i in range(KEPT_ARCHIVES)]
    for age, path in enumerate(old):
        path.write_bytes(b"classes")
        os.utime(path, (1_000_000 - age, 1_000_000 - age))  # old-0 the newest of them
    archive = _archive(tmp_path, libs)
    assert archive.write(_writer(0, []))
    assert sorted(cache.glob("*.jsa")) == sorted([archive.path, *old[:-1]])
