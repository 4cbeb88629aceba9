"""`streamlet experiment sweep --master spark://...` on a real standalone Spark cluster (no Kafka needed).

The cluster is the pyspark install's own master and worker processes (`spark-class ...deploy.master.Master`
and `...deploy.worker.Worker`, what `sbin/start-master.sh` and `start-worker.sh` run), started on free local
ports and stopped at the end. The sweep runs as a separate `streamlet` process, as a user would run it, so the
scenarios are simulated by the worker's executors, not in local mode.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pyspark = pytest.importorskip("pyspark")

SPARK_CLASS = Path(pyspark.__file__).parent / "bin" / "spark-class"
STREAMLET = Path(sys.executable).parent / "streamlet"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(path: Path, text: str, process: subprocess.Popen[bytes], timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text(errors="replace"):
            return
        if process.poll() is not None:
            break
        time.sleep(0.5)
    raise AssertionError(f"{text!r} not in {path} (exit {process.poll()}):\n{path.read_text(errors='replace')}")


def _start(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [str(SPARK_CLASS), *args], stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.fixture
def standalone_master(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    env.pop("SPARK_HOME", None)
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    master = _start(
        [
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--webui-port",
            str(_free_port()),
        ],
        tmp_path / "master.log",
        env,
    )
    worker = None
    try:
        _wait_for(tmp_path / "master.log", "I have been elected leader", master)
        worker = _start(
            [
                "org.apache.spark.deploy.worker.Worker",
                url,
                "--cores",
                "2",
                "--memory",
                "1g",
                "--webui-port",
                str(_free_port()),
                "--work-dir",
                str(tmp_path / "work"),
            ],
            tmp_path / "worker.log",
            env,
        )
        _wait_for(tmp_path / "worker.log", "Successfully registered with master", worker)
        yield url, env
    finally:
        if worker is not None:
            _stop(worker)
        _stop(master)


def test_a_sweep_runs_on_a_standalone_cluster(standalone_master: tuple[str, dict[str, str]], tmp_path: Path) -> None:
    url, env = standalone_master
    sweep = tmp_path / "cluster.toml"
    sweep.write_text(
        '[sweep]\nname = "cluster"\nseed = 5\nsituations = 20\nassignors = ["high_availability", "sticky", "faust"]\n'
        "[space]\nclients = { min = 2, max = 5 }\nstateful_tasks = { min = 4, max = 12 }\n"
    )
    out = tmp_path / "out"
    done = subprocess.run(
        [str(STREAMLET), "experiment", "sweep", str(sweep), "--master", url, "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["scenarios"], summary["situations"]) == (60, 20)
    assert set(summary["assignors"]) == {"high_availability", "sticky", "faust"}
    assert f"Ran on Spark master {url}" in (out / "report.md").read_text()
    # the executors ran on the worker: it launched an executor for the sweep's application
    assert any((tmp_path / "work").glob("app-*/*/stderr")), "no executor ran on the standalone worker"
