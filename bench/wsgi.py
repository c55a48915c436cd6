"""`gunicorn "bench.wsgi:app"`: the app as shipped, plus /bench-static/ for the same-size file.

The file lives in the bench's instance folder (FLASK_INSTANCE_PATH/static-bench), and is served by
send_from_directory like Flask's own /static/ route, through the same app, middleware and headers.
Everything else (pre-render, disk cache) is create_app's defaults, changed only through FLASK_* variables.
"""

from __future__ import annotations

import os
from pathlib import Path

from app import create_app
from bench.http import add_static_route

app = create_app()
add_static_route(app, Path(os.environ["FLASK_INSTANCE_PATH"]) / "static-bench")
