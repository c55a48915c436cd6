"""The one check of FLASK_SECRET_KEY: what is wrong with a key, in a sentence that never repeats a real key.

`create_app` refuses a weak key outside tests and debug mode; the Docker entrypoint asks `python -m app.secret_key`.
"""

from __future__ import annotations

import math
import os
import sys
from collections import Counter

# Values that must never protect a real deployment's sessions; compared case-insensitively.
INSECURE_SECRET_KEYS = frozenset({
    "dev", "development", "secret", "secret-key", "secretkey", "change-me", "changeme", "please-change-me",
    "test", "testing", "insecure", "default", "password", "flask",
})
# Words that mark a key copied from an example ("please-change-me-to-a-long-random-string").
PLACEHOLDER_WORDS = ("change-me", "changeme", "change_me", "replace-me", "replace_me", "your-secret", "your_secret")
MIN_LENGTH = 32  # characters; secrets.token_hex(32) gives 64
# An estimate of a key's randomness: its length times the Shannon entropy of its characters' frequencies.
# Random keys of 32 hex characters score 92 to 130 bits, of 64 about 245; a few characters cycled score low
# ("abcd" * 8: 64 bits).
MIN_BITS = 80


def estimated_bits(key: str) -> float:
    counts = Counter(key)
    return -sum(count * math.log2(count / len(key)) for count in counts.values())


def secret_key_problem(key: str | None) -> str | None:
    """What is wrong with `key` as FLASK_SECRET_KEY, or None when it will do: a well-known value, a
    placeholder, fewer than MIN_LENGTH characters, or too little randomness to resist guessing."""
    if key is None:
        return "FLASK_SECRET_KEY is not set"
    if key == "":
        return "FLASK_SECRET_KEY is empty"
    lowered = key.lower()
    if lowered in INSECURE_SECRET_KEYS:
        return f"FLASK_SECRET_KEY is the well-known development value {key!r}"
    if any(word in lowered for word in PLACEHOLDER_WORDS):
        return "FLASK_SECRET_KEY is a placeholder from an example, not a secret"
    if len(key) < MIN_LENGTH:
        return f"FLASK_SECRET_KEY is only {len(key)} characters long; it needs at least {MIN_LENGTH}"
    if len(set(key)) == 1:
        return f"FLASK_SECRET_KEY is one character repeated {len(key)} times, not a random string"
    bits = estimated_bits(key)
    if bits < MIN_BITS:
        return (f"FLASK_SECRET_KEY repeats a few characters ({len(set(key))} different ones in {len(key)}), about "
                f"{bits:.0f} bits of randomness; it needs at least {MIN_BITS}")
    return None


def main() -> int:
    """`python -m app.secret_key`: print the problem with $FLASK_SECRET_KEY (nothing when it is fine)."""
    problem = secret_key_problem(os.environ.get("FLASK_SECRET_KEY"))
    if problem:
        print(problem)
    return 0


if __name__ == "__main__":
    sys.exit(main())
