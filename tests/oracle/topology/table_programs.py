"""Random source tables, KTable operations and stream-table joins for the describe() oracle's programs.

`TablePrograms.step` adds one Java statement and its Python twin: a `builder.table` (with or without a
`Consumed` name and a store), a KTable `filter` / `filterNot` / `mapValues`, or a stream's `join` / `leftJoin`
with one of those tables (with or without a `Joined` name). Joins of re-keyed streams insert repartitions.
"""

from __future__ import annotations

import random
from collections.abc import Callable


class TablePrograms:
    """The tables of one random program (aggregations' tables cannot be joined yet, so they are not here)."""

    def __init__(self) -> None:
        self.tables: list[str] = []
        self.stores = 0

    def step(
        self,
        rng: random.Random,
        java: list[str],
        py: list[str],
        streams: list[str],
        to_streamable: list[str],
        topic: Callable[[], str],
        maybe_name: Callable[[str], str | None],
    ) -> None:
        roll = rng.random()
        if not self.tables or roll < 0.3:
            self._table(rng, java, py, topic(), maybe_name("tab"))
            to_streamable.append(self.tables[-1])
        elif roll < 0.6:
            t, var = rng.choice(self.tables), f"kt{len(self.tables)}"
            name = maybe_name("top")
            op = rng.choice(["filter", "filterNot", "mapValues"])
            jfn, pfn = ("v -> v", "lambda v: v") if op == "mapValues" else ("(k, v) -> true", "lambda k, v: True")
            pop = {"filter": "filter", "filterNot": "filter_not", "mapValues": "map_values"}[op]
            jnamed = f', Named.as("{name}")' if name else ""
            pnamed = f", name={name!r}" if name else ""
            java.append(f"KTable {var} = {t}.{op}({jfn}{jnamed});")
            py.append(f"{var} = {t}.{pop}({pfn}{pnamed})")
            self.tables.append(var)
            to_streamable.append(var)
        else:
            s, t, var = rng.choice(streams), rng.choice(self.tables), f"s{len(streams)}"
            left = rng.random() < 0.5
            name = maybe_name("join")
            jop, pop = ("leftJoin", "left_join") if left else ("join", "join")
            jjoined = f', Joined.as("{name}")' if name else ""
            pnamed = f", name={name!r}" if name else ""
            java.append(f"KStream {var} = {s}.{jop}({t}, (v, tv) -> v{jjoined});")
            py.append(f"{var} = {s}.{pop}({t}, lambda v, tv: v{pnamed})")
            streams.append(var)

    def _table(self, rng: random.Random, java: list[str], py: list[str], topic: str, name: str | None) -> None:
        var = f"kt{len(self.tables)}"
        store = None
        if rng.random() < 0.5:
            self.stores += 1
            store = f"tstore{self.stores}"
        jargs = [f'"{topic}"']
        pargs = [repr(topic)]
        if name:
            jargs.append(f'Consumed.as("{name}")')
            pargs.append(f"name={name!r}")
        if store:
            jargs.append(f'Materialized.as("{store}")')
            pargs.append(f"store_name={store!r}")
        java.append(f"KTable {var} = b.table({', '.join(jargs)});")
        py.append(f"{var} = b.table({', '.join(pargs)})")
        self.tables.append(var)
