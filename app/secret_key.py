"""The one check of FLASK_SECRET_KEY: what is wrong with a key, in a sentence that never repeats a real key.

`create_app` refuses a weak key in production; the Docker entrypoint asks `python -m app.secret_key`.
"""

from __future__ import annotations

import os
import sys

# Values that must never protect a real deployment's sessions; compared case-insensitively.
INSECURE_SECRET_KEYS = frozenset({
    "dev", "development", "secret", "secret-key", "secretkey", "change-me", "changeme", "please-change-me",
    "test", "testing", "insecure", "default", "password", "flask",
})
# Words that mark a key copied from an example ("please-change-me-to-a-long-random-string").
PLACEHOLDER_WORDS = ("change-me", "changeme", "change_me", "replace-me", "replace_me", "your-secret", "your_secret")
MIN_LENGTH = 32  # characters; secrets.token_hex(32) gives 64


def secret_key_problem(key: str | None, *, check_strength: bool = True) -> str | None:
    """What is wrong with `key` as FLASK_SECRET_KEY, or None when it will do.

    Well-known values and placeholders are always problems. `check_strength` adds the rules a guess
    could beat without knowing the value: fewer than MIN_LENGTH characters, or one character repeated.
    """
    if key is None:
        return "FLASK_SECRET_KEY is not set"
    if key == "":
        return "FLASK_SECRET_KEY is empty"
    lowered = key.lower()
    if lowered in INSECURE_SECRET_KEYS:
        return f"FLASK_SECRET_KEY is the well-known development value {key!r}"
    if any(word in lowered for word in PLACEHOLDER_WORDS):
        return "FLASK_SECRET_KEY is a placeholder from an example, not a secret"
    if not check_strength:
        return None
    if len(key) < MIN_LENGTH:
        return f"FLASK_SECRET_KEY is only {len(key)} characters long; it needs at least {MIN_LENGTH}"
    if len(set(key)) == 1:
        return f"FLASK_SECRET_KEY is one character repeated {len(key)} times, not a random string"
    return None


def main() -> int:
    """`python -m app.secret_key`: print the problem with $FLASK_SECRET_KEY (nothing when it is fine)."""
    problem = secret_key_problem(os.environ.get("FLASK_SECRET_KEY"))
    if problem:
        print(problem)
    return 0


if __name__ == "__main__":
    sys.exit(main())
