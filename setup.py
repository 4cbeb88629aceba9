"""The native parts: a Kafka record batch decoder for the consumers (`streamlet/_native/record_batch.c`) and
an encoder for the record collector (`streamlet/_native/record_encoder.c`).

Optional: without a C compiler the install still succeeds and streamlet uses aiokafka's decoder and builder.
"""

import hashlib
from pathlib import Path

from setuptools import Extension, setup


def source_hash(source: str) -> tuple[str, str]:
    """The C source's SHA-256, compiled into its module: a build from an older source is refused at import
    (`streamlet.kafka.native_modules`) instead of crashing the workers."""
    digest = hashlib.sha256((Path(__file__).resolve().parent / source).read_bytes()).hexdigest()
    return ("SOURCE_SHA256", f'"{digest}"')


setup(
    ext_modules=[
        Extension(
            "streamlet._record_batch",
            ["streamlet/_native/record_batch.c"],
            define_macros=[source_hash("streamlet/_native/record_batch.c")],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "streamlet._record_encoder",
            ["streamlet/_native/record_encoder.c"],
            define_macros=[source_hash("streamlet/_native/record_encoder.c")],
            extra_compile_args=["-O2"],
            optional=True,
        ),
    ]
)
