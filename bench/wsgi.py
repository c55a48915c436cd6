"""The cold-start baseline: a WSGI app that imports nothing and answers 200, served by the same gunicorn
settings as the app (`gunicorn --config docker/gunicorn.conf.py bench.wsgi:app`)."""


def app(environ, start_response):
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
    return [b"ok"]
