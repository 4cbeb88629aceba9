"""The native parts: a Kafka record batch decoder for the consumers (`streamlet/_native/record_batch.c`) and
an encoder for the record collector (`streamlet/_native/record_encoder.c`).

Optional: without a C compiler the install still succeeds and streamlet uses aiokafka's decoder and builder.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "streamlet._record_batch",
            ["streamlet/_native/record_batch.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "streamlet._record_encoder",
            ["streamlet/_native/record_encoder.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
    ]
)
