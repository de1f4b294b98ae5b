"""The one thing pyproject.toml cannot say: the optional C accelerator of the legacy encoder.

``optional=True``: without a C compiler (or Python's headers) the build warns and goes on, and
hami_core.protocol.fastpath uses its msgspec encoder instead (docs/performance.md, "Codec performance").
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "hami_core.protocol._legacy_native",
            ["hami_core/protocol/_legacy_native.c"],
            optional=True,
        )
    ]
)
