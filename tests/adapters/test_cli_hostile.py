"""The CLI under hostile conditions (issue 27, items 9–12): bytes that are not UTF-8, a closed
or full stdout, a closed or endless stdin, and terminal escapes inside notes. Each case runs
the real `vaultmem` in a subprocess and checks the exit status, the envelope and that no
traceback is printed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import cli_env

ESCAPES = "\x1b[31m\x1b]0;pwned\x07\x1b[2J\u202e"


def vaultmem(
    *args: str | bytes, stdin: int | None = None, stdout: int | None = subprocess.PIPE
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "vaultmem", *args],
        stdin=stdin,
        stdout=stdout,
        stderr=subprocess.PIPE,
        env=cli_env(),
        check=False,
    )


@pytest.fixture
def vault(example_vault: Path) -> Path:
    (example_vault / "Knowledge" / "Evil.md").write_text(
        f"# Evil {ESCAPES} title\n\nwidgets {ESCAPES} here, about widgets.\n", encoding="utf-8"
    )
    (example_vault / "Knowledge" / "Right\u202eleft.md").write_text("widgets too\n")
    assert vaultmem("reconcile", "--vault", str(example_vault)).returncode == 0
    return example_vault


@pytest.mark.parametrize(
    "args",
    [
        ("show", b"\xff\xfe"),
        ("read", b"\xff\xfe"),
        ("search", "x", "--folder", b"\xff\xfe"),
        ("recall", "x", "--scope", b"\xff\xfe"),
        ("store", "k", "x", "--source", b"\xff\xfe"),
        ("sql", b"SELECT '\xff'"),
    ],
)
def test_arguments_that_are_not_utf8_are_invalid_arguments(
    vault: Path, args: tuple[str | bytes, ...]
) -> None:
    result = vaultmem(*args, "--json", "--vault", str(vault))
    assert result.returncode == 2, result.stderr
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "invalid_argument" and "UTF-8" in error["message"]
    assert not (vault / "agent-memory" / "project").exists() or not list(
        (vault / "agent-memory").rglob("k.md")
    )  # nothing written


def test_a_closed_stdout_is_one_line_not_a_traceback(vault: Path) -> None:
    script = (
        "import os, sys, subprocess; os.close(1); "
        f"sys.exit(subprocess.call([sys.executable, '-m', 'vaultmem', 'status', '--json', "
        f"'--vault', {str(vault)!r}]))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, check=False)
    assert result.returncode == 1
    assert b"Traceback" not in result.stderr
    assert b"cannot write the output" in result.stderr


@pytest.mark.parametrize("as_json", [True, False])
def test_a_full_stdout_is_one_line_not_a_traceback(vault: Path, as_json: bool) -> None:
    with open("/dev/full", "wb") as full:
        flag = ("--json",) if as_json else ()
        result = vaultmem("status", *flag, "--vault", str(vault), stdout=full.fileno())
    assert result.returncode == 1
    assert b"Traceback" not in result.stderr and b"No space left" in result.stderr


def test_a_reader_that_leaves_early_gets_no_traceback(vault: Path) -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("VAULTMEM_") or k == "VAULTMEM_STATE_DIR"
    }
    command = (
        f"{sys.executable} -m vaultmem sql \"SELECT repeat('x', 100000) FROM range(50)\" "
        f"--json --vault {vault} | head -c 10"
    )
    result = subprocess.run(
        ["bash", "-c", f"{command}; exit ${{PIPESTATUS[0]}}"],
        capture_output=True,
        env=env,
        check=False,
    )
    assert result.stdout.startswith(b'{"ok"')
    assert b"Traceback" not in result.stderr and b"Exception ignored" not in result.stderr


def test_store_from_a_closed_stdin_is_an_invalid_argument(vault: Path) -> None:
    script = (
        "import os, sys, subprocess; os.close(0); "
        f"sys.exit(subprocess.call([sys.executable, '-m', 'vaultmem', 'store', 'k', '-', "
        f"'--json', '--vault', {str(vault)!r}]))"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, check=False)
    assert result.returncode == 2, result.stderr
    assert json.loads(result.stdout)["error"]["code"] == "invalid_argument"


def test_store_from_an_endless_stdin_stops_at_the_limit(vault: Path) -> None:
    """`/dev/zero` never ends: the read must stop at the limit + 1, not at end of input."""
    with open("/dev/zero", "rb") as zero:
        result = vaultmem("store", "k", "-", "--json", "--vault", str(vault), stdin=zero.fileno())
    assert result.returncode == 2
    assert "at most 1000000" in json.loads(result.stdout)["error"]["message"]


@pytest.mark.parametrize(
    "args",
    [
        ("search", "widgets"),
        ("recall", "widgets"),
        ("show", "Evil"),
        ("read", "Evil"),
        ("recent",),
        ("sql", "SELECT title, path FROM notes WHERE path LIKE 'Knowledge/%'"),
    ],
)
def test_terminal_escapes_in_notes_are_shown_not_sent(vault: Path, args: tuple[str, ...]) -> None:
    result = vaultmem(*args, "--vault", str(vault))
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode("utf-8")
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "\\x1b" in out or "\\u202e" in out  # the escape is visible, written out
