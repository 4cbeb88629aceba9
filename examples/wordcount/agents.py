"""WordCount written Faust-style: an agent and a table, compiled onto the same engine as the DSL.

`stream.flat_map_values(...).group_by(...)` becomes the same repartition topic the DSL creates, the table
is a RocksDB store with the changelog `<application_id>-counts-store-changelog`, and the loop body runs
inside the task that owns the word's partition.

    streamlet worker examples.wordcount.agents:app --threads 2 --web-port 6066
    curl http://127.0.0.1:6066/count/the     # the page below, from any worker
"""

from __future__ import annotations

import os

from examples.wordcount.dsl import INPUT_TOPIC, OUTPUT_TOPIC, split_words
from streamlet import App

app = App(os.environ.get("WORDCOUNT_APPLICATION_ID", "streams-wordcount-agents"), commit_interval_ms=1_000)

lines = app.topic(os.environ.get("WORDCOUNT_INPUT_TOPIC", INPUT_TOPIC), key_serde="str", value_serde="str")
counts_topic = app.topic(os.environ.get("WORDCOUNT_OUTPUT_TOPIC", OUTPUT_TOPIC), key_serde="str", value_serde="int64")
counts = app.Table("counts-store", key_serde="str", value_serde="int64", default=int)


@app.agent(lines, tables=[counts])
async def wordcount(stream):
    async for word in stream.flat_map_values(split_words).group_by(lambda word: word, name="counts-store"):
        counts[word] += 1
        await counts_topic.send(key=word, value=counts[word])


@app.page("/count/{word}")
async def get_count(web, request, word):
    """Faust-style page: the word's count from whichever worker owns it (the request is forwarded there)."""
    return web.json({"word": word, "count": counts[word]})
