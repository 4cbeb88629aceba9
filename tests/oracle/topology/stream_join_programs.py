"""Random KStream-KStream joins for the describe() oracle.

`stream_join_step` adds one Java statement and its Python twin: a `join` / `leftJoin` / `outerJoin` of two
streams of the program (or of a stream with itself), with `JoinWindows` of every kind (with or without grace,
`before`/`after`) and a `StreamJoined` with or without a name and a store name. Joins of re-keyed streams insert
repartitions (named `<name>-left`/`-right` or after the stream's node).
"""

from __future__ import annotations

import random
from collections.abc import Callable


def _windows(rng: random.Random) -> tuple[str, str]:
    difference = rng.choice([0, 5, 60_000])
    if rng.random() < 0.5:
        java = f"JoinWindows.ofTimeDifferenceWithNoGrace(Duration.ofMillis({difference}))"
        py = f"JoinWindows.of_time_difference_with_no_grace({difference})"
    else:
        grace = rng.choice([0, 10, 1000])
        java = f"JoinWindows.ofTimeDifferenceAndGrace(Duration.ofMillis({difference}), Duration.ofMillis({grace}))"
        py = f"JoinWindows.of_time_difference_and_grace({difference}, {grace})"
    for method in ("before", "after"):
        if rng.random() < 0.25:
            ms = rng.choice([1, 7, 100])
            java += f".{method}(Duration.ofMillis({ms}))"
            py += f".{method}({ms})"
    return java, py


def stream_join_step(
    rng: random.Random,
    java: list[str],
    py: list[str],
    streams: list[str],
    maybe_name: Callable[[str], str | None],
) -> None:
    """Join two random streams (possibly one with itself); the result is a new stream."""
    this, other, var = rng.choice(streams), rng.choice(streams), f"s{len(streams)}"
    jop, pop = rng.choice([("join", "join"), ("leftJoin", "left_join"), ("outerJoin", "outer_join")])
    jwin, pwin = _windows(rng)
    name, store = maybe_name("ssj"), maybe_name("sst")
    jjoined = "org.apache.kafka.common.serialization.Serdes.String()"
    jjoined = f"StreamJoined.with({jjoined}, {jjoined}, {jjoined})"
    pjoined = "StreamJoined.with_('str', 'str', 'str')"
    if store:
        jjoined, pjoined = f'((StreamJoined) StreamJoined.as("{store}"))', f"StreamJoined.as_({store!r})"
    if name:
        jjoined += f'.withName("{name}")'
        pjoined += f".with_name({name!r})"
    if name or store or rng.random() < 0.3:
        java.append(f"KStream {var} = {this}.{jop}({other}, (v1, v2) -> v1, {jwin}, {jjoined});")
        py.append(f"{var} = {this}.{pop}({other}, lambda v1, v2: v1, {pwin}, stream_joined={pjoined})")
    else:
        java.append(f"KStream {var} = {this}.{jop}({other}, (v1, v2) -> v1, {jwin});")
        py.append(f"{var} = {this}.{pop}({other}, lambda v1, v2: v1, {pwin})")
    streams.append(var)
