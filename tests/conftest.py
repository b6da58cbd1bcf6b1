"""Shared fixtures: a clean environment for every test and a private copy of example-vault;
the rule that every property test (hypothesis) is `slow`; and what `unprivileged` means."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

EXAMPLE_VAULT = Path(__file__).resolve().parent.parent / "example-vault"
REQUIRE_UNPRIVILEGED = os.environ.get("VAULTMEM_REQUIRE_UNPRIVILEGED") == "1"
"""Set by `.ci/run` for its run as an unprivileged user: an `unprivileged` test that cannot
run there fails instead of skipping (read at import: the fixture below clears VAULTMEM_*)."""


def permissions_bind(folder: Path) -> bool:
    """Whether a folder's mode stops this process from writing in it (not for root, nor for a
    process with CAP_DAC_OVERRIDE)."""
    probe = folder / "permission-probe"
    probe.mkdir()
    probe.chmod(0o555)
    try:
        return not os.access(probe, os.W_OK)
    finally:
        probe.chmod(0o755)
        probe.rmdir()


@pytest.fixture(autouse=True)
def _permissions_must_bind(request: pytest.FixtureRequest, tmp_path_factory: Any) -> None:
    """An `unprivileged` test needs file modes to bind: it skips where they do not (as root),
    and fails there under `.ci/run`'s unprivileged run, which must run it."""
    if request.node.get_closest_marker("unprivileged") is None:
        return
    if permissions_bind(tmp_path_factory.mktemp("probe")):
        return
    reason = (
        "file modes do not bind for this user (root?); `.ci/run` runs the `unprivileged` "
        "tests as an unprivileged user"
    )
    if REQUIRE_UNPRIVILEGED:
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="session", autouse=True)
def _state_base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """No test writes vault state into the real home: every vault's state folder goes under
    one temporary folder of the session (set before any fixture, module-scoped ones too, and
    inherited by subprocesses). State folders are keyed by the vault's real path, and each
    test's vault has its own, so the tests still share nothing."""
    base = tmp_path_factory.mktemp("state")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("VAULTMEM_STATE_DIR", str(base))
        yield base


@pytest.fixture(autouse=True)
def _clear_vaultmem_env(monkeypatch: pytest.MonkeyPatch, _state_base: Path) -> None:
    """A developer's VAULTMEM_VAULT must never leak into a test; the state folder stays the
    session's."""
    for name in list(os.environ):
        if name.startswith("VAULTMEM_"):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("VAULTMEM_STATE_DIR", str(_state_base))


@pytest.fixture
def example_vault(tmp_path: Path) -> Path:
    """A copy of example-vault (without any built index) that a test may change freely."""
    target = tmp_path / "example-vault"
    shutil.copytree(
        EXAMPLE_VAULT,
        target,
        ignore=shutil.ignore_patterns("index.duckdb*", "*.lock", "journal*"),
    )
    return target


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every hypothesis test is `slow` (it runs hundreds of examples), so `make test-quick`
    (`-m "not slow"`) skips them without each one carrying the marker."""
    for item in items:
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.slow)
