"""A tiny browser-like HTTP client over the standard library (cookies, forms, CSRF) for tests that
talk to real server processes: gunicorn, or the Docker container."""

from __future__ import annotations

import http.cookiejar
import re
import urllib.error
import urllib.parse
import urllib.request

CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


class Browser:
    def __init__(self, base_url: str, jar: http.cookiejar.CookieJar | None = None):
        self.base_url = base_url.rstrip("/")
        self.jar = jar if jar is not None else http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        self.plain = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar), _NoRedirect)

    def get(self, path: str) -> tuple[int, str, str]:
        """GET following redirects: (status, final URL, body)."""
        try:
            with self.opener.open(self.base_url + path, timeout=30) as response:
                return response.status, response.url, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.url, error.read().decode()

    def post_form(self, path: str, fields: dict[str, str | list[str]]) -> tuple[int, str | None]:
        """POST without following the redirect: (status, Location)."""
        data = urllib.parse.urlencode(fields, doseq=True).encode()
        request = urllib.request.Request(self.base_url + path, data=data, method="POST")
        try:
            with self.plain.open(request, timeout=30) as response:
                return response.status, response.headers.get("Location")
        except urllib.error.HTTPError as error:
            return error.code, error.headers.get("Location")

    def answer(self, bank: str, question: str, values: str | list[str]) -> int:
        status, _, page = self.get(f"/quiz/{bank}/{question}")
        match = CSRF.search(page)
        if match is None:
            raise AssertionError(f"no CSRF token on /quiz/{bank}/{question} (status {status})")
        code, _ = self.post_form(f"/quiz/{bank}/{question}", {"csrf_token": match.group(1), "answer": values})
        return code
