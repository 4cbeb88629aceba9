"""A Faust-style app whose leader timer counts its ticks in a table and sends each count (for e2e tests).

`Workers` passes the application id and topics in its WORDCOUNT_* variables. The agent only puts the
table into sub-topology 0, so into task 0_0, where the timer's ticks run.
"""

from __future__ import annotations

import os

from streamlet import App

app = App(os.environ.get("WORDCOUNT_APPLICATION_ID", "timer-app"))
source = app.topic(os.environ.get("WORDCOUNT_INPUT_TOPIC", "timer-input"), value_serde="str")
counts = app.topic(os.environ.get("WORDCOUNT_OUTPUT_TOPIC", "timer-ticks"), key_serde="str", value_serde="int64")
ticks = app.Table("ticks", key_type=str, value_type=int, default=int)


@app.agent(source, tables=[ticks])
async def hold_the_table(stream):  # type: ignore[no-untyped-def]
    async for _ in stream:
        pass


@app.timer(0.1)
async def tick() -> None:
    ticks["n"] += 1
    await counts.send(key="tick", value=ticks["n"])
