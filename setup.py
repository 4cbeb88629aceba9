"""The one native part: a Kafka record batch decoder for restoration (`streamlet/_native/record_batch.c`).

Optional: without a C compiler the install still succeeds and restoration uses aiokafka's decoder.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "streamlet._record_batch",
            ["streamlet/_native/record_batch.c"],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ]
)
