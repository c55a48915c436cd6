"""What the figures were measured on: CPU, cores, load, library versions, BLAS, and the BLAS variables."""

from __future__ import annotations

import os
import platform
import subprocess

BLAS_VARIABLES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                  "MKL_NUM_THREADS", "OPENBLAS_THREAD_TIMEOUT")


def describe() -> dict:
    import matplotlib
    import numpy

    info = {
        "cpu": _cpu_model(),
        "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "load_average": os.getloadavg(),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "matplotlib": matplotlib.__version__,
        "torch": _torch_version(),
        "kernel": platform.release(),
        "environment": {name: os.environ.get(name, "(unset)") for name in BLAS_VARIABLES},
        "blas": _blas(),
        "wrk": _wrk_version(),
        "engine_softmax": _engine_softmax(),
    }
    return info


def _engine_softmax() -> str:
    """Whether the engine's float32 softmaxes run in its C kernel here (docs/engine.md)."""
    from app.engine import attention

    if attention.use_kernel:
        return "the C kernel (app/engine/_fastsoftmax.c, AVX2 and FMA)"
    if attention._fastsoftmax is None:
        return "NumPy (the C kernel is not built)"
    return "NumPy (the C kernel is built, but this CPU lacks AVX2 or FMA)"


def _cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _torch_version() -> str:
    try:
        import torch

        return f"{torch.__version__} (BLAS: {'MKL' if torch.backends.mkl.is_available() else 'other'}, " \
               f"{torch.get_num_threads()} threads)"
    except ImportError:
        return "not installed"


def _blas() -> list[str]:
    try:
        from threadpoolctl import threadpool_info

        return [f"{pool.get('internal_api')} {pool.get('version') or ''} ({pool.get('architecture') or '?'} kernels, "
                f"{pool.get('num_threads')} threads, {pool.get('threading_layer') or pool.get('prefix')})"
                for pool in threadpool_info() if pool.get("user_api") == "blas"]
    except ImportError:
        import numpy

        return [str(numpy.show_config(mode="dicts").get("Build Dependencies", {}).get("blas"))]


def _wrk_version() -> str:
    try:
        out = subprocess.run(["wrk", "--version"], capture_output=True, text=True)
        return (out.stdout or out.stderr).splitlines()[0]
    except (OSError, IndexError):
        return "not installed"
