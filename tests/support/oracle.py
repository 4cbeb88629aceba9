"""Kafka Streams' own task assignors (HATA by default; a case's ``assignor`` field picks another) as a
differential oracle.

``build_oracle()`` builds the Maven project in ``oracle/`` (once; the jar is reused while it is newer
than the sources), and :class:`Oracle` keeps one JVM running that answers contract cases
(ARCHITECTURE.md, "assignor simulation contract") one JSON line at a time::

    with Oracle() as oracle:
        result = oracle.run(case)   # {"clients": {...}, "followup_rebalance_ms": int | None}

A case the Java side rejects comes back as ``{"error": "..."}`` (``run`` does not raise for it).

``research_case_to_contract`` turns the cases of
``tests/fixtures/assignment/kafka-streams-assignor-cases.json`` into contract cases.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import select
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

from streamlet.kafka.broker import cache_root
from tests.support.jvm import SHORT_LIVED

REPO_ROOT = Path(__file__).resolve().parents[2]
ORACLE_DIR = REPO_ROOT / "oracle"
POM = ORACLE_DIR / "pom.xml"
JAR = ORACLE_DIR / "target" / "streamlet-assignor-oracle.jar"
LIB_DIR = ORACLE_DIR / "target" / "lib"

LONG_MAX = 2**63 - 1
DEFAULT_PROBING_REBALANCE_INTERVAL_MS = 600_000


class OracleError(RuntimeError):
    """The oracle could not be built or started, or its JVM died."""


def _require_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise OracleError(
            f"`{name}` was not found on PATH. The assignor oracle needs Java 17+ (`java`) and "
            f"Maven 3.8+ (`mvn`) to build and run Kafka Streams' own assignor from {ORACLE_DIR}; "
            "install them (e.g. `apt-get install openjdk-17-jdk-headless maven`)."
        )
    return path


def _sources(project: Path) -> list[Path]:
    return [project / "pom.xml", *sorted(p for p in (project / "src").rglob("*") if p.is_file())]


def _is_fresh(project: Path, jar: Path) -> bool:
    lib = jar.parent / "lib"
    if not jar.is_file() or not lib.is_dir() or not any(lib.glob("kafka-streams-*.jar")):
        return False
    jar_mtime = jar.stat().st_mtime
    return all(src.stat().st_mtime <= jar_mtime for src in _sources(project))


def _build_cache(project: Path) -> Path:
    """Where a build of exactly these sources is kept: a clone of the same commit reuses it."""
    digest = hashlib.sha256()
    for source in _sources(project):
        digest.update(source.relative_to(project).as_posix().encode() + b"\0" + source.read_bytes() + b"\0")
    return cache_root() / "oracle-builds" / f"{project.name}-{digest.hexdigest()[:16]}"


def _restore(project: Path, jar: Path, cached: Path) -> bool:
    if not (cached / jar.name).is_file() or not any((cached / "lib").glob("kafka-streams-*.jar")):
        return False
    shutil.copytree(cached / "lib", jar.parent / "lib", dirs_exist_ok=True)
    shutil.copy2(cached / jar.name, jar)
    jar.touch()  # newer than the clone's sources
    return _is_fresh(project, jar)


def _save(jar: Path, cached: Path) -> None:
    """Keep the build (best effort: the cache only saves time; another clone may be saving the same build)."""
    partial = cached.with_name(f"{cached.name}.partial-{os.getpid()}")
    try:
        shutil.copytree(jar.parent / "lib", partial / "lib")
        shutil.copy2(jar, partial / jar.name)
        shutil.rmtree(cached, ignore_errors=True)
        partial.rename(cached)
    except OSError:
        return
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    for stale in cached.parent.glob(f"{cached.name.rsplit('-', 1)[0]}-*"):  # builds of older sources
        if stale != cached and ".partial-" not in stale.name:
            shutil.rmtree(stale, ignore_errors=True)


def build_maven_jar(project: Path, jar: Path, what: str, force: bool = False) -> Path:
    """Build `jar` (and `target/lib`, its dependencies) with Maven unless it is newer than the project's sources.

    A fresh clone has no `target/`: a build of the same sources (pom and src, hashed) is then copied from streamlet's
    cache directory, where every build is saved, instead of building again (Maven took 18 s of CPU for both).
    Tries an offline build first (works once ~/.m2 has the dependencies), then an online one. Safe to call from
    several processes at once (a file lock serialises the builds)."""
    _require_tool("java")
    if not force and _is_fresh(project, jar):
        return jar
    mvn = _require_tool("mvn")
    target = jar.parent
    target.mkdir(parents=True, exist_ok=True)
    with open(target / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not force and _is_fresh(project, jar):  # another process built it while we waited
            return jar
        shutil.rmtree(target / "lib", ignore_errors=True)  # Maven only adds jars: an old Kafka's would stay on the path
        cached = _build_cache(project)
        if not force and _restore(project, jar, cached):
            return jar
        outputs = []
        for offline in (True, False):
            cmd = [mvn, "-q", "-B", *(["-o"] if offline else []), "-f", str(project / "pom.xml"), "package"]
            proc = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=900)
            if proc.returncode == 0 and jar.is_file():
                jar.touch()  # mark it newer than the sources even if Maven skipped repackaging
                _save(jar, cached)
                return jar
            outputs.append(f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
        raise OracleError(f"building the {what} failed:\n" + "\n".join(outputs)[-8000:])


def build_oracle(force: bool = False) -> Path:
    """The assignor oracle's jar (`oracle/`), built if needed (`build_maven_jar`)."""
    return build_maven_jar(ORACLE_DIR, JAR, "assignor oracle", force)


class Oracle:
    """One long-lived JVM running ``io.streamlet.oracle.Oracle``; ``run`` sends it one case at a time."""

    def __init__(self, jar: Path | None = None, timeout_s: float = 120.0) -> None:
        self._jar = jar if jar is not None else build_oracle()
        self._timeout_s = timeout_s
        self._lock = threading.Lock()
        self._stderr = tempfile.TemporaryFile()
        java = _require_tool("java")
        self._proc = subprocess.Popen(
            # java.io.tmpdir: Java ignores TMPDIR, and the state stores a TopologyTestDriver creates per case go
            # there: on tmpfs with the suite's other temporary files (scripts/test), not on the disk
            [java, *SHORT_LIVED, "-Xshare:auto"]
            + [f"-Djava.io.tmpdir={tempfile.gettempdir()}", "-jar", str(self._jar)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            cwd=REPO_ROOT,
        )

    def _stderr_tail(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")[-4000:]

    def run(self, case: dict[str, Any]) -> dict[str, Any]:
        """Assign ``case`` (contract input) with Kafka Streams' assignor and return the contract output.

        Returns ``{"error": "..."}`` if the Java side rejected the case.
        """
        line = (json.dumps(case, separators=(",", ":")) + "\n").encode()
        with self._lock:
            proc = self._proc
            if proc.poll() is not None:
                raise OracleError(f"oracle JVM has exited ({proc.returncode}):\n{self._stderr_tail()}")
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write(line)
                proc.stdin.flush()
            except BrokenPipeError as e:
                raise OracleError(f"oracle JVM is gone:\n{self._stderr_tail()}") from e
            ready, _, _ = select.select([proc.stdout], [], [], self._timeout_s)
            if not ready:
                raise OracleError(f"oracle gave no answer within {self._timeout_s}s")
            out = proc.stdout.readline()
            if not out:
                proc.wait(timeout=10)
                raise OracleError(f"oracle JVM exited ({proc.returncode}):\n{self._stderr_tail()}")
        return json.loads(out)

    def run_many(self, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Send all ``cases`` at once and read their results in order (one round trip for a whole batch).

        A thread writes while this one reads, so neither side blocks on a full pipe. ``select`` cannot
        time the reads out (lines already in the reader's buffer do not make the pipe readable), so a
        watchdog kills the JVM if the batch takes longer than the timeout.
        """
        payload = b"".join((json.dumps(c, separators=(",", ":")) + "\n").encode() for c in cases)
        results: list[dict[str, Any]] = []
        with self._lock:
            proc = self._proc
            if proc.poll() is not None:
                raise OracleError(f"oracle JVM has exited ({proc.returncode}):\n{self._stderr_tail()}")
            assert proc.stdin is not None and proc.stdout is not None
            stdin = proc.stdin

            def write() -> None:
                with contextlib.suppress(BrokenPipeError):
                    stdin.write(payload)
                    stdin.flush()

            writer = threading.Thread(target=write, daemon=True)
            watchdog = threading.Timer(self._timeout_s, proc.kill)
            writer.start()
            watchdog.start()
            try:
                for _ in cases:
                    out = proc.stdout.readline()
                    if not out:
                        proc.wait(timeout=10)
                        raise OracleError(
                            f"oracle JVM exited ({proc.returncode}) before answering the whole batch "
                            f"(watchdog: {self._timeout_s}s):\n{self._stderr_tail()}"
                        )
                    results.append(json.loads(out))
            finally:
                watchdog.cancel()
            writer.join()
        return results

    def close(self) -> None:
        proc = self._proc
        if proc.poll() is None:
            with contextlib.suppress(OSError):
                assert proc.stdin is not None
                proc.stdin.close()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        self._stderr.close()

    def __enter__(self) -> Oracle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- research JSON cases -> contract cases ---------------------------------------------------------


def _long(v: Any) -> int:
    if v == "Long.MAX_VALUE":
        return LONG_MAX
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError(f"not a long: {v!r}")
    return v


def _contract_config(cfg: dict[str, Any]) -> dict[str, Any]:
    return {
        "num_standby_replicas": _long(cfg["num_standby_replicas"]),
        "max_warmup_replicas": _long(cfg["max_warmup_replicas"]),
        "acceptable_recovery_lag": _long(cfg["acceptable_recovery_lag"]),
        "probing_rebalance_interval_ms": _long(
            cfg.get("probing_rebalance_interval_ms", DEFAULT_PROBING_REBALANCE_INTERVAL_MS)
        ),
    }


def research_case_to_contract(case: dict[str, Any]) -> dict[str, Any]:
    """Convert one ``assignor_cases`` entry of the research JSON into a contract case.

    * ``full_pipeline``: capacity = number of consumers; ``task_offset_sums`` = union of the consumers'
      reported offset sums (later consumers win, as the leader's ``putAll`` does); ``prev_active`` =
      owned partitions' tasks plus tasks reported as -2, ``prev_standby`` = the other reported tasks
      (ClientState#initializePrevTasks).
    * ``lags_given``: each lag L on task t is expressed as end offset sum E_t = max lag over the
      clients (at least 0) and a reported offset sum E_t - L (lag -2 is reported as -2), so that
      ClientState#computeTaskLags gives back exactly L.
    """
    mode = case["mode"]
    stateful = sorted(case["stateful_tasks"], key=_task_key)
    stateless = sorted(case["stateless_tasks"], key=_task_key)
    clients: dict[str, dict[str, Any]] = {}
    if mode == "full_pipeline":
        ends = {t: _long(v) for t, v in case.get("changelog_end_offset_sums", {}).items()}
        for cl in case["clients"]:
            sums: dict[str, int] = {}
            owned: set[str] = set()
            for consumer in cl["consumers"]:
                sums.update({t: _long(v) for t, v in consumer.get("reported_task_offset_sums", {}).items()})
                owned.update(consumer.get("owned_partitions_of_tasks", []))
            prev_active = owned | {t for t, v in sums.items() if v == -2}
            clients[cl["process_id"]] = {
                "capacity": len(cl["consumers"]),
                "prev_active": sorted(prev_active, key=_task_key),
                "prev_standby": sorted(set(sums) - prev_active, key=_task_key),
                "task_offset_sums": dict(sorted(sums.items(), key=lambda kv: _task_key(kv[0]))),
            }
    elif mode == "lags_given":
        lags = {cl["process_id"]: {t: _long(v) for t, v in cl["task_lags"].items()} for cl in case["clients"]}
        ends = {}
        for t in stateful:
            ends[t] = max([0, *(lag[t] for lag in lags.values() if lag.get(t, 0) >= 0)])
        for cl in case["clients"]:
            pid = cl["process_id"]
            sums = {}
            for t in stateful:
                lag = lags[pid][t]
                if lag < 0:
                    sums[t] = lag  # -2 (running active) / -3 (unknown) pass through computeTaskLags
                elif ends[t] - lag != 0:
                    sums[t] = ends[t] - lag
                # an offset sum of 0 is the same as reporting nothing: lag = end
            clients[pid] = {
                "capacity": _long(cl["capacity"]),
                "prev_active": sorted((t for t, v in sums.items() if v == -2), key=_task_key),
                "prev_standby": [],
                "task_offset_sums": sums,
            }
    else:
        raise ValueError(f"unknown mode {mode!r}")
    return {
        "name": case["name"],
        "config": _contract_config(case["config"]),
        "tasks": {"stateless": stateless, "stateful": stateful},
        "changelog_end_offset_sums": {t: ends[t] for t in stateful},
        "clients": clients,
    }


def research_expected_to_contract(case: dict[str, Any]) -> dict[str, Any]:
    """The client-level part of a research case's ``expected_from_java``, in contract output form."""
    exp = case["expected_from_java"]
    interval = _long(case["config"].get("probing_rebalance_interval_ms", DEFAULT_PROBING_REBALANCE_INTERVAL_MS))
    return {
        "clients": {
            pid: {
                "active": sorted(c["active"], key=_task_key),
                "standby": sorted(c["standby"], key=_task_key),
            }
            for pid, c in exp["clients"].items()
        },
        "followup_rebalance_ms": interval if exp["probing_rebalance_needed"] else None,
    }


def _task_key(task: str) -> tuple[int, int]:
    sub, part = task.split("_")
    return int(sub), int(part)


def normalize_output(result: dict[str, Any]) -> dict[str, Any]:
    """Contract output reduced to what is compared: sorted task lists per client, and the follow-up."""
    return {
        "clients": {
            str(pid).lower(): {
                "active": sorted(c.get("active", []), key=_task_key),
                "standby": sorted(c.get("standby", []), key=_task_key),
            }
            for pid, c in result["clients"].items()
        },
        "followup_rebalance_ms": result.get("followup_rebalance_ms"),
    }


if __name__ == "__main__":  # pragma: no cover - manual use: JSON Lines in, JSON Lines out
    import sys

    with Oracle() as _oracle:
        for _line in sys.stdin:
            if _line.strip():
                print(json.dumps(_oracle.run(json.loads(_line))), flush=True)
