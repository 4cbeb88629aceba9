"""Waiting for conditions, never for time: the tests' one way to wait, and a free port for a server of their own."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


async def wait_until(condition: Callable[[], object], what: str, timeout: float = 60) -> None:
    """Poll `condition` every 0.1 s on the running loop (the clients keep working meanwhile) until it holds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.1)


async def poll_until(
    fetch: Callable[[], Awaitable[T]], done: Callable[[T], bool], *, timeout: float = 60, interval: float = 0.3
) -> T:
    """What `fetch()` returns once `done` holds for it, or at the timeout: the caller asserts on it, so a
    failure shows what was last seen instead of a bare timeout."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = await fetch()
        if done(value) or loop.time() > deadline:
            return value
        await asyncio.sleep(interval)


def free_port(host: str = "127.0.0.1") -> int:
    """A port free now on `host` (another process may take it before it is bound: good enough for tests)."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])
