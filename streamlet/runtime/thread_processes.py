"""One process per stream thread: `streamlet worker --threads N --process-per-thread` uses N cores.

The stream threads of one streamlet process share one event loop (and one GIL), so on a CPU-bound topology a
second thread brings little (docs/performance.md: a worker's 2 threads in one process against one process each).
With `process_per_thread` the worker forks one single-threaded client per stream thread and supervises them as
one unit:

* Each process is a client of its own (its own process id, state directory `<state_dir>/process-<i>`, web port
  `web_port + i`), so the assignor sees N clients of one thread each rather than one client of N threads. The
  client-wide budgets (record cache, KIP-892 uncommitted bytes, bounded RocksDB memory) are split N ways, so
  the worker as a whole keeps to what it was given.
* The worker stops as one: SIGINT/SIGTERM go to every process, and when one exits on its own (a failure, or a
  shutdown the application asked for), the others are stopped too, as Kafka Streams' default uncaught-exception
  response (SHUTDOWN_CLIENT) stops the client whose thread died. A killed supervisor takes its processes with it
  (Linux's parent-death signal).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import sys
import traceback
from collections.abc import Callable, Iterable, Mapping
from types import FrameType
from typing import Any

from streamlet.config import StreamsConfig

log = logging.getLogger("streamlet.worker")

_PR_SET_PDEATHSIG = 1
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def process_settings(settings: Mapping[str, Any], config: StreamsConfig, index: int) -> dict[str, Any]:
    """The worker settings of the process running stream thread `index` (from 0) of a process-per-thread worker.

    `settings` are the worker's resolved settings and `config` the StreamsConfig they make. Pure, so every
    derived setting is unit-tested.
    """
    count = config.num_stream_threads
    out = dict(settings)
    out.update(
        num_stream_threads=1,
        process_per_thread=False,
        state_dir=os.path.join(config.state_dir, f"process-{index}"),
        statestore_cache_max_bytes=config.statestore_cache_max_bytes // count,
        rocksdb_bounded_memory_bytes=config.rocksdb_bounded_memory_bytes // count,
    )
    if config.statestore_uncommitted_max_bytes > 0:  # -1: no bound
        out["statestore_uncommitted_max_bytes"] = max(1, config.statestore_uncommitted_max_bytes // count)
    if config.web_port:
        out["web_port"] = config.web_port + index
    if config.application_server:  # each process answers the queries for its own tasks
        host, _, port = config.application_server.rpartition(":")
        out["application_server"] = f"{host}:{int(port) + index}"
    if config.group_instance_id:  # its one thread joins as "<id>-process-<i>-1"
        out["group_instance_id"] = f"{config.group_instance_id}-process-{index}"
    return out


def supervise(run_process: Callable[[int], int], count: int, log_format: str = logging.BASIC_FORMAT) -> int:
    """Fork `count` processes, process i running `run_process(i)` (its exit code), and wait for them all.

    Each process's log lines start with `[process <i>]` and then `log_format`: they share the worker's output.

    Returns 0 when every process exited 0 after a stop signal, else the first failure's exit code (1 for a
    process killed by a signal).
    """
    parent = os.getpid()
    children: dict[int, int] = {}  # pid -> index
    stopping = False

    def forward(sig: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)

    # A stop signal that comes while the processes start waits until each side has its handler up: with the
    # default action the supervisor would die without passing it on, and a process before it can stop cleanly.
    unblocked = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    try:
        for index in range(count):
            pid = os.fork()
            if pid == 0:
                os._exit(_run_child(run_process, index, parent, log_format, unblocked))
            children[pid] = index
        previous = {sig: signal.signal(sig, forward) for sig in _STOP_SIGNALS}
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, unblocked)
    log.info(
        "worker: %d processes, one per stream thread: %s",
        count,
        ", ".join(f"{i}: pid {p}" for p, i in children.items()),
    )
    exit_code = 0
    try:
        while children:
            try:
                pid, status = os.wait()
            except ChildProcessError:
                break
            index = children.pop(pid)
            code = os.waitstatus_to_exitcode(status)
            if code != 0 and exit_code == 0:
                exit_code = code if code > 0 else 1
            if not stopping:
                how = f"exited with code {code}" if code >= 0 else f"was killed by signal {-code}"
                log.error("worker: process %d (pid %d) %s; stopping the other processes", index, pid, how)
                forward(signal.SIGTERM, None)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return exit_code


def _run_child(
    run_process: Callable[[int], int], index: int, parent: int, log_format: str, unblocked: Iterable[int]
) -> int:
    """The forked process's life: never returns into the supervisor's code (the caller `_exit`s with this).
    It starts with the stop signals blocked (`unblocked`: the mask to restore once its handlers are up)."""
    code = 1
    try:
        for handler in logging.getLogger().handlers:
            handler.setFormatter(logging.Formatter(f"[process {index}] {log_format}"))
        # until the client's own handlers are up: Ctrl-C as in any Python program, SIGTERM stops it at once
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, _stop_before_start)
        signal.pthread_sigmask(signal.SIG_SETMASK, unblocked)  # a stop signal that came meanwhile is handled here
        _die_with(parent)
        code = run_process(index)
    except KeyboardInterrupt:
        code = 130
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - reported, then the supervisor stops the others
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            logging.shutdown()
            sys.stdout.flush()
            sys.stderr.flush()
    return code


def _stop_before_start(_sig: int, _frame: FrameType | None) -> None:
    raise SystemExit(0)


def _die_with(parent: int) -> None:
    """Ask Linux for SIGTERM when the supervisor dies (kill -9 included), so no process outlives its worker."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # it died before the request took effect
        raise SystemExit(1)
