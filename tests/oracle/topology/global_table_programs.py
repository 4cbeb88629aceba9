"""Random GlobalKTables and stream-global table joins for the describe() oracle.

`GlobalTablePrograms.step` adds one Java statement and its Python twin: a `builder.globalTable` (with or
without a `Consumed` name and a store), or a stream's `join` / `leftJoin` with one of them through a key
selector (with or without a `Named` name). Global stores take sub-topology ids among the others but print
"for global store"; their joins name no store and insert no repartition.
"""

from __future__ import annotations

import random
from collections.abc import Callable


class GlobalTablePrograms:
    """The global tables of one random program."""

    def __init__(self) -> None:
        self.tables: list[str] = []
        self.stores = 0

    def step(
        self,
        rng: random.Random,
        java: list[str],
        py: list[str],
        streams: list[str],
        topic: Callable[[], str],
        maybe_name: Callable[[str], str | None],
    ) -> None:
        if not self.tables or rng.random() < 0.25:
            self._global_table(rng, java, py, topic(), maybe_name("gtab"))
            return
        s, t, var = rng.choice(streams), rng.choice(self.tables), f"s{len(streams)}"
        jop, pop = ("leftJoin", "left_join") if rng.random() < 0.5 else ("join", "join")
        name = maybe_name("gjoin")
        jnamed = f', Named.as("{name}")' if name else ""
        pnamed = f", name={name!r}" if name else ""
        java.append(f"KStream {var} = {s}.{jop}({t}, (k, v) -> v, (v, gv) -> v{jnamed});")
        py.append(f"{var} = {s}.{pop}({t}, lambda k, v: v, lambda v, gv: v{pnamed})")
        streams.append(var)

    def _global_table(self, rng: random.Random, java: list[str], py: list[str], topic: str, name: str | None) -> None:
        var = f"glt{len(self.tables)}"
        jargs, pargs = [f'"{topic}"'], [repr(topic)]
        if name:
            jargs.append(f'Consumed.as("{name}")')
            pargs.append(f"name={name!r}")
        if rng.random() < 0.5:
            self.stores += 1
            jargs.append(f'Materialized.as("globalstore{self.stores}")')
            pargs.append(f"store_name='globalstore{self.stores}'")
        java.append(f"GlobalKTable {var} = b.globalTable({', '.join(jargs)});")
        py.append(f"{var} = b.global_table({', '.join(pargs)})")
        self.tables.append(var)
