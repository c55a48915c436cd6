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
        "memory_gb": _memory_gb(),
        "kernel": platform.release(),
        "environment": {name: os.environ.get(name, "(unset)") for name in BLAS_VARIABLES},
        "blas": _blas(),
        "wrk": _wrk_version(),
        "gunicorn": _version("gunicorn"),
        "flask": _version("flask"),
    }
    return info


def _memory_gb() -> float:
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024**2
    except OSError:
        pass
    return 0.0


def _version(distribution: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return "not installed"


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
