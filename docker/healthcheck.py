"""The image's HEALTHCHECK: exit 0 when GET /healthz answers 200 (the app is up and its database answers).

Python's urllib, because the slim base image has no curl.
"""

import os
import sys
import urllib.request

url = f"http://127.0.0.1:{os.environ.get('PORT', '8000')}/healthz"
try:
    with urllib.request.urlopen(url, timeout=4) as response:
        sys.exit(0 if response.status == 200 else 1)
except Exception as error:  # HTTPError for 503, URLError while gunicorn starts
    print(f"healthcheck: {url}: {error}", file=sys.stderr)
    sys.exit(1)
