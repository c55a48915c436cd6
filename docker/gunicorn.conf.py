"""gunicorn settings for the container, read from the environment (defaults set in the Dockerfile).

Plot rendering is CPU-bound and matplotlib serialises drawing inside one process, so capacity comes
from worker processes (GUNICORN_WORKERS, about one per CPU); threads (GUNICORN_THREADS) only overlap
waiting on the database and the network.
"""

import os

bind = f"0.0.0.0:{os.environ.get('PORT', '8000')}"
workers = int(os.environ.get("GUNICORN_WORKERS", "2"))
threads = int(os.environ.get("GUNICORN_THREADS", "4"))  # more than 1 selects the gthread worker
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "60"))
graceful_timeout = 20
keepalive = 5
# Heartbeat files in memory, not on the container's overlay filesystem, which can stall workers.
worker_tmp_dir = "/dev/shm"
accesslog = "-"  # stdout, so `docker logs` shows every request
errorlog = "-"
# X-Forwarded-Proto is trusted only from the addresses in FORWARDED_ALLOW_IPS (gunicorn reads that
# variable itself; its default is 127.0.0.1,::1). Set it to your reverse proxy's address.
