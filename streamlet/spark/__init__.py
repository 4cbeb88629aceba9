"""The batch side on PySpark (extra `streamlet[spark]`): ground truth for what a streamlet application wrote.

`streamlet verify wordcount` recomputes WordCount from the input topic with a Spark batch job and compares it
with the latest counts in the output topic. PySpark is imported lazily, inside the functions that need it, so
`import streamlet` and `import streamlet.spark` work without the extra; a missing PySpark raises
`SparkNotInstalledError` saying to install `streamlet[spark]`.

- `streamlet.spark.session`: `get_spark()`, one local SparkSession per process with Spark's Kafka connector.
- `streamlet.spark.wordcount`: `ground_truth_wordcount`, `latest_counts`, `compare`, `split_words_column`.
- `streamlet.spark.windowed_count`: a windowed count's ground truth and the emit-final check of its output
  (`python -m streamlet.spark.windowed_count ...`).
- `streamlet.spark.cli`: `add_verify_parser(subparsers)` for `streamlet verify wordcount`.
"""

from __future__ import annotations

from streamlet.errors import StreamletError


class SparkNotInstalledError(StreamletError):
    """PySpark is not installed: `pip install 'streamlet[spark]'`."""


class SparkSetupError(StreamletError):
    """The Spark driver could not be started (Java missing, the Kafka connector could not be resolved, ...)."""


__all__ = ["SparkNotInstalledError", "SparkSetupError"]
