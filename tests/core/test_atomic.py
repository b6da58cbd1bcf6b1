"""Atomic replacement keeps permissions: mkstemp alone would make every published file 0600."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from vaultmem.core.atomic import replace_file


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_file_gets_the_umask_default(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        replace_file(tmp_path / "new.md", b"hello\n")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "new.md") == 0o644
    assert (tmp_path / "new.md").read_bytes() == b"hello\n"


def test_an_existing_file_keeps_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "kept.md"
    target.write_bytes(b"old\n")
    target.chmod(0o640)
    replace_file(target, b"new\n")
    assert _mode(target) == 0o640
    assert target.read_bytes() == b"new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["kept.md"]  # no temp file left behind
