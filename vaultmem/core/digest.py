"""BLAKE2b for the index's keys and digests, without importing `hashlib`.

BLAKE2 is built into CPython (`_blake2`); `hashlib` loads OpenSSL's bindings as well (~11M
instructions, ~3 ms), which every reconcile would pay, a no-op included. A Python built
without its own BLAKE2 falls back to `hashlib`: the digests are the same.
"""

from __future__ import annotations

try:
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - a Python built without its own BLAKE2
    from hashlib import blake2b

__all__ = ["blake2b"]
