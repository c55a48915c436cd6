"""The one build setting pyproject.toml cannot hold stably: the engine's optional C kernel.

app/engine/_fastsoftmax.c is a float32 softmax with AVX2 and FMA (docs/engine.md). It is optional:
without a C compiler, or on another architecture, the package installs without it and the
engine uses NumPy for everything. Everything else about the package is in pyproject.toml.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "app.engine._fastsoftmax",
            sources=["app/engine/_fastsoftmax.c"],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ]
)
