"""Benchmarks for attention-quiz: engine against torch, plot renders against naive pyplot, HTTP under load.

`bench/run` installs what they need and writes docs/benchmarks.md; every figure is a same-run ratio.
"""
