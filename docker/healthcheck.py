"""The image's HEALTHCHECK: exit 0 when GET /healthz answers 200 through the front (nginx, then the app and its
database).

Python's urllib, because the slim base image has no curl.
"""

import sys
import urllib.request

url = "http://127.0.0.1:8000/healthz"
try:
    with urllib.request.urlopen(url, timeout=4) as response:
        sys.exit(0 if response.status == 200 else 1)
except Exception as error:  # HTTPError for 503, URLError while gunicorn starts
    print(f"healthcheck: {url}: {error}", file=sys.stderr)
    sys.exit(1)
