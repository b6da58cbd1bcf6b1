"""The managed folder: path checks, symlink and case refusals, atomic writes, the trash."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from vaultmem.core.config import Config, load_config
from vaultmem.core.errors import PathEscapeError
from vaultmem.files import managed

NOW = datetime(2026, 11, 29, 21, 4, 5, tzinfo=UTC)


@pytest.fixture
def config(example_vault: Path) -> Config:
    return load_config(example_vault)


def test_topic_paths(config: Config) -> None:
    assert managed.topic_path(config, "project", "atlas", "k") == "agent-memory/project/atlas/k.md"
    assert managed.topic_path(config, "global", None, "k") == "agent-memory/global/k.md"
    with pytest.raises(PathEscapeError):
        managed.topic_path(config, "global", "x", "k")
    with pytest.raises(PathEscapeError):
        managed.topic_path(config, "session", None, "k")
    with pytest.raises(PathEscapeError):
        managed.topic_path(config, "elsewhere", None, "k")


@pytest.mark.parametrize(
    ("scope_id", "key"),
    [
        ("..", "k"),
        ("atlas", ".."),
        ("../../etc", "k"),
        ("atlas", "../../../outside"),
        ("/etc", "k"),
        ("atlas", "/tmp/x"),
        ("at\x00las", "k"),
        ("atlas", "k\x00.md"),
        ("x" * 65, "k"),
        ("atlas", "k" * 61),
        ("atlas", "k" * 300),
        (".hidden", "k"),
        ("a\\b", "k"),
        ("C:", "k"),
    ],
)
def test_escapes_are_refused(config: Config, scope_id: str, key: str) -> None:
    with pytest.raises(PathEscapeError):
        managed.topic_path(config, "project", scope_id, key)


def test_paths_outside_the_managed_folder_are_refused(config: Config) -> None:
    for rel in ("Knowledge/DuckDB.md", "agent-memory", "agent-memoryx/a.md", "../x.md"):
        with pytest.raises(PathEscapeError):
            managed.write_text(config, rel, "x")


def test_symlinked_folders_are_refused(config: Config, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = config.root
    (root / "agent-memory/project/evil").symlink_to(outside, target_is_directory=True)
    with pytest.raises(PathEscapeError, match="symbolic link"):
        managed.write_text(config, "agent-memory/project/evil/k.md", "x")
    (root / "agent-memory/global/link.md").symlink_to(outside / "k.md")
    with pytest.raises(PathEscapeError):
        managed.write_text(config, "agent-memory/global/link.md", "x")
    assert list(outside.iterdir()) == []


def test_a_symlinked_managed_folder_is_refused(config: Config, tmp_path: Path) -> None:
    real = config.root / "agent-memory"
    moved = tmp_path / "moved"
    real.rename(moved)
    real.symlink_to(moved, target_is_directory=True)
    with pytest.raises(PathEscapeError):
        managed.write_text(config, "agent-memory/global/k.md", "x")
    assert not (moved / "global/k.md").exists()


def test_case_only_twins_are_refused(config: Config) -> None:
    (config.root / "agent-memory/project/Borealis-2").mkdir()
    with pytest.raises(PathEscapeError, match="only in case"):
        managed.write_text(config, "agent-memory/project/borealis-2/k.md", "x")
    (config.root / "agent-memory/global/Notes.md").write_text("human")
    with pytest.raises(PathEscapeError, match="only in case"):
        managed.write_text(config, "agent-memory/global/notes.md", "x")


def test_atomic_write_leaves_no_temp_files(config: Config) -> None:
    rel = "agent-memory/session/s-1/k.md"
    managed.write_text(config, rel, "one\n")
    managed.write_text(config, rel, "two\n")
    folder = config.root / "agent-memory/session/s-1"
    assert os.listdir(folder) == ["k.md"]
    assert managed.read_text(config, rel) == "two\n"
    assert managed.read_text(config, "agent-memory/session/s-1/none.md") is None


def test_trash_keeps_both_on_a_name_clash(config: Config) -> None:
    rel = "agent-memory/global/k.md"
    managed.write_text(config, rel, "first\n")
    first = managed.move_to_trash(config, rel, NOW)
    managed.write_text(config, rel, "second\n")
    second = managed.move_to_trash(config, rel, NOW)
    assert first == "agent-memory/.trash/global/k.md"
    assert second == "agent-memory/.trash/global/k.20261129T210405Z.md"
    assert (config.root / second).read_text() == "second\n"
    assert not (config.root / rel).exists()


def test_list_topics_skips_links_and_hidden(config: Config) -> None:
    (config.root / "agent-memory/global/.hidden.md").write_text("x")
    topics = managed.list_topics(config)
    assert "agent-memory/project/atlas/release-process.md" in topics
    assert "agent-memory/global/user-preferences.md" in topics
    assert not any(".hidden" in t or "_decisions" in t for t in topics)
    assert len(topics) == 6


# --- issue 16: nothing escapes ------------------------------------------------------------------

_SWAPPER = """
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b = sys.argv[1].encode(), sys.argv[2].encode()
while True:
    libc.renameat2(-100, a, -100, b, 2)  # AT_FDCWD, RENAME_EXCHANGE
"""


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="renameat2 is Linux-only")
def test_a_folder_swapped_for_a_link_mid_write_never_leaks(config: Config, tmp_path: Path) -> None:
    """Another process keeps exchanging a scope folder with a link to outside the vault (the
    check-then-write race): no write may land outside, and no temp file may be left there."""
    outside = tmp_path / "outside"
    outside.mkdir()
    base = config.root / "agent-memory/project"
    (base / "race").mkdir()
    (base / "swap").symlink_to(outside, target_is_directory=True)
    swapper = subprocess.Popen(
        [sys.executable, "-c", _SWAPPER, str(base / "race"), str(base / "swap")]
    )
    try:
        for i in range(1500):
            with contextlib.suppress(PathEscapeError):
                managed.write_text(config, "agent-memory/project/race/leak.md", f"{i}\n")
    finally:
        swapper.kill()
        swapper.wait()
    assert os.listdir(outside) == []
    for folder in ("race", "swap"):
        if not (base / folder).is_symlink():
            assert [n for n in os.listdir(base / folder) if n.endswith(".tmp")] == []


def test_a_fifo_at_a_topic_path_is_refused_at_once(config: Config) -> None:
    rel = "agent-memory/global/pipe.md"
    os.mkfifo(config.root / rel)
    with pytest.raises(PathEscapeError, match="FIFO"):
        managed.read_text(config, rel)
    with pytest.raises(PathEscapeError, match="FIFO"):
        managed.write_text(config, rel, "x")


def test_a_folder_at_a_topic_path_is_a_clear_error(config: Config) -> None:
    rel = "agent-memory/global/folder.md"
    (config.root / rel).mkdir()
    with pytest.raises(PathEscapeError, match="a folder"):
        managed.read_text(config, rel)
    with pytest.raises(PathEscapeError, match="a folder"):
        managed.write_text(config, rel, "x")


def test_bytes_that_are_not_utf8_survive_a_rewrite(config: Config) -> None:
    rel = "agent-memory/global/latin1.md"
    (config.root / rel).write_bytes(b"caf\xe9 \xff\n")
    text = managed.read_text(config, rel, errors="surrogateescape")
    assert text is not None
    managed.write_text(config, rel, text + "more\n")
    assert (config.root / rel).read_bytes() == b"caf\xe9 \xff\nmore\n"


@pytest.mark.parametrize("name", ["con", "aux", "NUL", "com1", "lpt9", "con.txt", "a.", "a "])
def test_names_no_system_can_hold_are_refused_everywhere(config: Config, name: str) -> None:
    from vaultmem.core.names import portable_problem
    from vaultmem.memory.identity import check_scope_id
    from vaultmem.okf.bundle import name_problem

    assert portable_problem(name) is not None
    with pytest.raises(PathEscapeError):
        managed.topic_path(config, "project", name, "k")
    with pytest.raises(PathEscapeError):
        check_scope_id(name)
    assert name_problem(name + ".md") is not None or name_problem(name) is not None
    if name.islower() and name.isalnum():
        with pytest.raises(PathEscapeError):
            managed.topic_path(config, "global", None, name)
