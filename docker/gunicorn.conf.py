"""gunicorn settings for the container, read from the environment (defaults set in the Dockerfile).

Plot rendering is CPU-bound and matplotlib serialises drawing inside one process, so capacity comes
from worker processes (GUNICORN_WORKERS, about one per CPU); threads (GUNICORN_THREADS) only overlap
waiting on the database and the network.
"""

import gc
import os

# The image binds a unix socket behind its nginx (docker/serve.sh); alone, gunicorn serves port 8000 itself.
bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("GUNICORN_WORKERS", "2"))
# More than 1 selects the gthread worker. 8: at most 6 of them wait for or draw new plots (the render
# gate of app.visuals.service), so 2 are always free for pages and figures already drawn.
threads = int(os.environ.get("GUNICORN_THREADS", "8"))
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "60"))
graceful_timeout = 20
keepalive = 5
# Heartbeat files in memory, not on the container's overlay filesystem, which can stall workers.
worker_tmp_dir = "/dev/shm"
accesslog = "-"  # stdout (the image logs requests through nginx instead: docker/serve.sh)
errorlog = "-"
# X-Forwarded-Proto is trusted only from the addresses in FORWARDED_ALLOW_IPS (gunicorn reads that
# variable itself; its default is 127.0.0.1,::1). Set it to your reverse proxy's address.

# The master builds the app once (imports, bank validation) and the workers are forked from it: a
# start costs one create_app, not one per worker at once on the same CPUs, and the workers share the
# master's memory pages until they write to them.
preload_app = True


def pre_fork(server, worker):
    # Everything the master built (the app, its banks, the model's tables) lives as long as the workers do. Frozen,
    # the garbage collector of a worker never scans it: a full collection there took 340 ms before, holding up
    # every request of that worker, and it no longer writes to those shared pages (Python's docs, gc.freeze).
    gc.freeze()


def post_fork(server, worker):
    # Database connections the master may have opened must not be shared by the forked workers
    # (SQLAlchemy's "using connection pools with multiprocessing"): each worker opens its own.
    # (The bench serves a bare WSGI function with these settings too: it has no engine.)
    engine = getattr(server.app.wsgi(), "extensions", {}).get("db_engine")
    if engine is not None:
        engine.dispose(close=False)

