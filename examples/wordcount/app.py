"""The WordCount App that `streamlet worker examples.wordcount.app:app` runs (DSL style).

Topic names and the application id can be overridden with environment variables so tests and the demo
can use fresh topics: WORDCOUNT_INPUT_TOPIC, WORDCOUNT_OUTPUT_TOPIC, WORDCOUNT_APPLICATION_ID.
WORDCOUNT_PRE_AGGREGATE=1 counts words per task before the repartition topic (`count(pre_aggregate=True)`).
"""

from __future__ import annotations

import os

from examples.wordcount.dsl import APPLICATION_ID, INPUT_TOPIC, OUTPUT_TOPIC, count_words
from streamlet import App

input_topic = os.environ.get("WORDCOUNT_INPUT_TOPIC", INPUT_TOPIC)
output_topic = os.environ.get("WORDCOUNT_OUTPUT_TOPIC", OUTPUT_TOPIC)

app = App(os.environ.get("WORDCOUNT_APPLICATION_ID", APPLICATION_ID), commit_interval_ms=1_000)

pre_aggregate = os.environ.get("WORDCOUNT_PRE_AGGREGATE", "") not in ("", "0")
count_words(app.stream(input_topic, key_serde="str", value_serde="str"), output_topic, pre_aggregate=pre_aggregate)
