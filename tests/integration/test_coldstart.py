"""A cold CLI process imports only what its command needs (issues 12 and 14: start-up time).

Each check runs a fresh interpreter and reads `sys.modules`, so an eager import added anywhere
on the CLI's import path (or the facade's) fails here rather than slowing every command.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.index.test_reconcile import assert_equals_rebuild
from vaultmem.core.config import Config
from vaultmem.files.lock import writer_lock
from vaultmem.index import reconcile as reconcile_module
from vaultmem.storage import store
from vaultmem.vault import Vault

# Word segmenters (`core/segment.py`): each loads on the first Chinese or Japanese text only.
SEGMENTERS = (
    "rjieba",
    "vaultmem.core.jieba_slice",
    "sudachipy",
    "sudachidict_small",
    "sudachidict_core",
)
# Never needed to build the CLI: each loads only for the command that uses it.
NOT_AT_START = (
    "watchfiles",  # `vaultmem watch`
    "mcp",  # `vaultmem mcp`
    "vaultmem.okf",  # `export`/`import`/`validate okf`
    "numpy",  # the semantic extra
    "tokenizers",  # the semantic extra
    "mistune",  # parsing notes: reconcile, read, parse
    "duckdb",  # opening the index
    "_duckdb",  # the engine itself (storage imports it without the `duckdb` package)
    "rich",  # drawing text: loads on first use of `output.console`, never for --json
    "vaultmem.memory",  # recall, context, topics, relations
    "vaultmem.index",  # reconcile, reading, catalog
    "vaultmem.search",  # search
    *SEGMENTERS,
)
# Not needed by a search: the parser, the memory layer, OKF, the watcher, the MCP server.
NOT_FOR_SEARCH = (
    "watchfiles",
    "mcp",
    "vaultmem.okf",
    "numpy",
    "tokenizers",
    "mistune",
    "vaultmem.memory.recall",
    "vaultmem.memory.topic_store",
    "vaultmem.index.reconcile",
    "pydantic",  # the MCP SDK's models: a CLI command never needs them
    "duckdb",  # the Python package around `_duckdb`: its relational API and version lookup
    "rich",  # a --json search draws nothing
    "secrets",  # see NOT_FOR_AN_EDIT
    "vaultmem.search.vectors",  # a words search: the vector side loads for --mode vectors/hybrid
    "vaultmem.search.embedding",
    "vaultmem.storage.vector_queries",
    "vaultmem.core.note_model",  # a search reads stored rows: it never builds a parsed note
    "shutil",  # the state folder moves files only when an old layout is found
    *SEGMENTERS,  # an English search segments nothing
)
# Not needed by a one-note edit (`vaultmem reconcile --json`): it parses one note in process.
NOT_FOR_AN_EDIT = (
    "watchfiles",
    "mcp",
    "vaultmem.okf",
    "numpy",
    "tokenizers",
    "vaultmem.memory",  # a topic's reader loads only when a managed note is parsed
    "vaultmem.search.query",
    "pydantic",
    "duckdb",
    "rich",
    "multiprocessing",  # one note parses in this process, not in workers
    "concurrent.futures.process",
    "secrets",  # temp names come from os.urandom: `secrets` loads hmac and OpenSSL
    *SEGMENTERS,
)


def _run_cli(argv: list[str]) -> str:
    """Code that runs the CLI's `main` with `argv` in the child interpreter."""
    return (
        "import sys\n"
        "from vaultmem.adapters import cli\n"
        f"sys.argv = {['vaultmem', *argv]!r}\n"
        "try:\n"
        "    code = cli.main()\n"
        "except SystemExit as exit:\n"
        "    code = exit.code\n"
        "assert not code, code\n"
    )


def _loaded(code: str, cwd: Path | None = None) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport json, sys; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
        cwd=cwd,
    ).stdout
    return set(json.loads(out.splitlines()[-1]))


def _offenders(loaded: set[str], banned: tuple[str, ...]) -> list[str]:
    return sorted(m for m in loaded if any(m == b or m.startswith(b + ".") for b in banned))


def test_importing_the_cli_loads_no_capability() -> None:
    assert _offenders(_loaded("import vaultmem.adapters.cli"), NOT_AT_START) == []


def test_the_parse_workers_module_loads_no_database() -> None:
    """The forkserver preloads `index.parallel` into every worker: DuckDB must stay out of it
    (its module, its threads), whatever the workers share with the load (`storage.rows`)."""
    loaded = _loaded("import vaultmem.index.parallel")
    assert "vaultmem.index.early_cut" in loaded
    assert _offenders(loaded, ("duckdb", "_duckdb", "vaultmem.storage.store")) == []


def test_the_check_sees_an_eager_import() -> None:
    loaded = _loaded("import vaultmem.adapters.cli, mistune")
    assert "mistune" in _offenders(loaded, NOT_AT_START)


def test_a_search_loads_only_what_search_needs(tmp_path: Path) -> None:
    root = tmp_path
    (root / ".obsidian").mkdir()
    (root / "note.md").write_text("# Note\n\nrun the tests\n", encoding="utf-8")
    Vault.init(root)
    Vault(root).reconcile()
    code = _run_cli(["search", "tests", "--json"])
    loaded = _loaded(code, cwd=root)
    assert "vaultmem.search.query" in loaded  # the search ran
    assert _offenders(loaded, NOT_FOR_SEARCH) == []


def test_a_chinese_search_loads_its_segmenter_only(tmp_path: Path) -> None:
    """A Chinese query and its snippet are cut by rjieba's engine from the slices of jieba's
    dictionary they need (`core.jieba_slice`): the `rjieba` package, whose import builds the
    whole dictionary (~0.2-0.4 s), stays out, and so does the Japanese segmenter."""
    root = tmp_path
    (root / ".obsidian").mkdir()
    (root / "note.md").write_text("# 同步\n\n怎么在多个设备之间同步笔记\n", encoding="utf-8")
    Vault.init(root)
    Vault(root).reconcile()
    loaded = _loaded(_run_cli(["search", "怎么同步笔记", "--json"]), cwd=root)
    assert {"rjieba.rjieba", "vaultmem.core.jieba_slice"} <= loaded
    assert "rjieba" not in loaded
    assert _offenders(loaded, ("sudachipy", "sudachidict_small", "sudachidict_core")) == []


def test_a_japanese_search_loads_its_segmenter_only(tmp_path: Path) -> None:
    """A kana query and a hit whose section holds kana: the Han-only words of both (同期,
    設定) are cut as Japanese, as the note was indexed, so the Chinese segmenter stays out."""
    root = tmp_path
    (root / ".obsidian").mkdir()
    note = "# 同期 設定\n\n同期 設定 デバイス間でノートを同期する\n"
    (root / "note.md").write_text(note, encoding="utf-8")
    Vault.init(root)
    Vault(root).reconcile()
    loaded = _loaded(_run_cli(["search", "同期 設定 ノート", "--json"]), cwd=root)
    assert "sudachipy" in loaded
    assert _offenders(loaded, ("rjieba",)) == []


def test_a_one_note_edit_loads_only_what_it_needs(tmp_path: Path) -> None:
    root = tmp_path
    _edited_vault(root)
    code = _run_cli(["reconcile", "--json"]) + (
        "from vaultmem.storage import store\n"  # the edit wrote: the index was opened
        "assert store.__name__ in sys.modules\n"
    )
    loaded = _loaded(code, cwd=root)
    assert "mistune" in loaded  # the edit was parsed
    assert _offenders(loaded, NOT_FOR_AN_EDIT) == []
    assert Vault(root).search("edit")[0].path == "note 1.md"


def test_text_output_to_a_pipe_loads_no_rich(tmp_path: Path) -> None:
    """An edit and a search printed as plain lines (stdout a pipe, as an agent or a script
    reads them) never import rich's console; a terminal still gets rich's drawing."""
    root = tmp_path
    _edited_vault(root)
    for argv in (["reconcile"], ["search", "edit"], ["status"]):
        loaded = _loaded(_run_cli(argv), cwd=root)
        assert _offenders(loaded, ("rich",)) == [], argv
    forced = subprocess.run(
        [sys.executable, "-c", _run_cli(["search", "edit"]) + "print('rich' in sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=root,
        env={**os.environ, "FORCE_COLOR": "1"},
    ).stdout
    assert forced.splitlines()[-1] == "True"  # rich decides when told the pipe is a terminal


def test_a_command_builds_only_its_own_click_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`main` turns only the command it runs into a click command; the full help (and
    completion, an unknown command) has every one."""
    from vaultmem.adapters import cli

    built: list[str] = []
    real = cli._Command.__init__

    def record(self: Any, name: str, op: Any) -> None:
        built.append(op.name)
        real(self, name, op)

    monkeypatch.setattr(cli._Command, "__init__", record)
    for argv, expected in (
        (["search", "-h"], ["search"]),
        (["export", "okf", "-h"], ["export okf"]),
    ):
        built.clear()
        assert cli.main(argv) == 0
        assert built == expected
    built.clear()
    assert cli.main(["--help"]) == 0
    assert sorted(built) == sorted(op.name for op in cli.OPERATIONS if " " not in op.name)
    capsys.readouterr()


@pytest.mark.parametrize(
    "text",
    ["plain", "[bold]x[/]", "a \\[b] c", "[link=x]y", "ends in \\", "ends in \\\\", "[1] [#f00]",
     "\\\\[red]", "[@click]", "x[/]y", "[]", "[ not a tag]"],
)  # fmt: skip
def test_escape_is_richs_escape(text: str) -> None:
    """`output.escape` restates rich's (so escaping loads no rich): they must agree."""
    from rich.markup import escape

    from vaultmem.adapters.output import escape as ours

    assert ours(text) == escape(text)


# -- a one-note edit opens DuckDB once (`reconcile.SMALL_WRITE_BYTES`) ---------------------------


def _edited_vault(root: Path) -> Config:
    (root / ".obsidian").mkdir()
    for i in range(3):
        (root / f"note {i}.md").write_text(f"# Note {i}\n\n[[note 0]] words\n", encoding="utf-8")
    config = Vault.init(root).config
    reconcile_module.reconcile(config)
    with (root / "note 1.md").open("a", encoding="utf-8") as note:
        note.write("an edit, with [[note 2]]\n")
    return config


def _count_opens(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The `read_only` flag of every connection reconcile opens, in order."""
    opened: list[bool] = []
    real = store.connect

    def connect(path: Path, *, read_only: bool, **kwargs: Any) -> store.Connection:
        opened.append(read_only)
        return real(path, read_only=read_only, **kwargs)

    monkeypatch.setattr(store, "connect", connect)
    return opened


def test_a_small_edit_opens_the_index_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = _edited_vault(tmp_path)
    opened = _count_opens(monkeypatch)
    report = reconcile_module.reconcile(config)
    assert (report.changed, report.unchanged) == (1, 2)
    assert opened == [False]  # the state read, the parse and the write: one connection
    assert reconcile_module.reconcile(config).changed == 0
    assert opened == [False]  # and the last survey it left settles the next run
    assert_equals_rebuild(config)


def test_a_larger_change_reads_once_and_parses_unlocked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _edited_vault(tmp_path)
    monkeypatch.setattr(reconcile_module, "SMALL_WRITE_BYTES", 0)
    opened = _count_opens(monkeypatch)
    assert reconcile_module.reconcile(config).changed == 1
    assert opened == [False, False]  # the state read is kept; the write opens again
    assert_equals_rebuild(config)


def test_a_small_edit_does_not_wait_for_a_busy_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer holds the lock: the edit goes the usual way (state, parse, then wait);
    the state comes from the record the last writer left (`storage.index_state`), so the
    index opens once, for the write."""
    config = _edited_vault(tmp_path)
    opened = _count_opens(monkeypatch)
    held = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with writer_lock(config.state_dir, timeout_s=5):
            held.set()
            release.wait(5)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(5)
    threading.Timer(0.3, release.set).start()
    try:
        assert reconcile_module.reconcile(config).changed == 1
    finally:
        release.set()
        holder.join()
    assert opened == [False]
    assert_equals_rebuild(config)


# -- what a cold edit compiles and collects ----------------------------------------------------

# The dataclasses a one-note edit may build at import: the public models (`core.models`,
# `core.note_model`, `Config`: their dataclass behaviour is the Python API). Any other
# (~2.9M instructions each at import, `dataclasses` compiles their methods) belongs in a named
# tuple or a plain class; see benchmarks/HISTORY.md.
EDIT_DATACLASS_MODULES = (
    "vaultmem.core.models",
    "vaultmem.core.note_model",
    "vaultmem.core.config",
)


def test_a_one_note_edit_builds_no_other_dataclass(tmp_path: Path) -> None:
    root = tmp_path
    _edited_vault(root)
    code = _run_cli(["reconcile", "--json"]) + (
        "import dataclasses, json\n"
        "built = sorted(f'{name}.{k}' for name, m in list(sys.modules.items())\n"
        "    if name.startswith('vaultmem') for k, v in vars(m).items()\n"
        "    if isinstance(v, type) and v.__module__ == name and dataclasses.is_dataclass(v))\n"
        "print(json.dumps(built))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root
    ).stdout
    built = json.loads(out.splitlines()[-1])
    assert "vaultmem.core.note_model.Note" in built  # the check sees the edit's dataclasses
    assert [c for c in built if not c.startswith(EDIT_DATACLASS_MODULES)] == []


def _run_main(argv: list[str]) -> tuple[tuple[int, int, int], int, bool]:
    """Run `python -m vaultmem`'s `main` in process; the collector's thresholds, frozen count
    and survivor freezing (`core.collector.short_lived`) it left, then the collector as it
    was."""
    import gc

    from vaultmem import __main__ as entry
    from vaultmem.core import collector

    before = gc.get_threshold()
    saved = sys.argv
    sys.argv = ["vaultmem", *argv]
    try:
        assert entry.main() == 0
        return gc.get_threshold(), gc.get_freeze_count(), collector._freeze_survivors
    finally:
        sys.argv = saved
        gc.set_threshold(*before)
        gc.unfreeze()
        collector.short_lived(False)  # this test process is a long-lived one


def test_a_short_command_collects_rarely_and_freezes_its_imports(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from vaultmem import __main__ as entry

    threshold, frozen, freezes_survivors = _run_main(["version"])
    assert threshold[0] == entry.SHORT_LIVED_THRESHOLD
    assert frozen > 1000  # the imported modules' objects
    assert freezes_survivors
    assert "vaultmem" in capsys.readouterr().out


_YOUNG_AFTER_EDIT = """
import gc, sys
from vaultmem.core import collector
if sys.argv[1] == "never-frozen":  # the check's own check: what the edit leaves to collect
    collector.short_lived = lambda on=True: None
sys.argv = ["vaultmem", "reconcile", "--json"]
from vaultmem.__main__ import main
assert main() == 0
print(len(gc.get_objects()))
"""


def test_a_short_edit_leaves_nothing_for_the_collector_to_visit(tmp_path: Path) -> None:
    """What a cold edit keeps alive (the index state for a warm run) is frozen when the run
    ends, not visited by the first collection after it: 38 ms at 100,000 notes."""
    root = tmp_path / "vault"
    (root / ".obsidian").mkdir(parents=True)
    for i in range(300):
        (root / f"note {i}.md").write_text(f"# Note {i}\n\n[[note 0]] words {i}\n", "utf-8")
    reconcile_module.reconcile(Vault.init(root).config)

    def young(mode: str) -> int:
        with (root / "note 7.md").open("a", encoding="utf-8") as note:
            note.write(f"an edit ({mode})\n")
        out = subprocess.run(
            [sys.executable, "-c", _YOUNG_AFTER_EDIT, mode],
            capture_output=True,
            text=True,
            check=True,
            cwd=root,
        ).stdout
        return int(out.splitlines()[-1])

    assert young("never-frozen") > 1500  # ~50 objects per note are alive after the run
    assert young("short-lived") < 100


@pytest.mark.parametrize("command", ["watch", "mcp"])
def test_a_long_lived_command_keeps_the_default_collector(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import gc

    default = gc.get_threshold()
    threshold, _, freezes_survivors = _run_main([command, "--help"])
    assert threshold == default
    assert not freezes_survivors  # a cycle among frozen objects would never be collected
    assert command in capsys.readouterr().out


def _script(argv: list[str], before: str = "", cwd: Path | None = None) -> Any:
    """Run the installed command's entry (`__main__.script`) in a fresh interpreter, after
    `before` (Python run first)."""
    code = (
        "import sys\n"
        f"{before}\n"
        f"sys.argv = ['vaultmem', *{argv!r}]\n"
        "from vaultmem.__main__ import script\n"
        "script()\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # buffered, as usual
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=cwd, env=env
    )


def test_the_command_leaves_with_its_output_its_handlers_and_its_threads_done(
    tmp_path: Path,
) -> None:
    """A short command skips only the interpreter's teardown: the output arrives whole, the
    exit handlers run, a thread still working is waited for, and the exit code is the
    command's."""
    marks = tmp_path / "marks"
    before = (
        "import atexit, threading, time\n"
        f"marks = open({str(marks)!r}, 'a')\n"
        "atexit.register(lambda: (marks.write('handler\\n'), marks.flush()))\n"
        "def late():\n"
        "    time.sleep(0.3)\n"
        "    marks.write('thread\\n'); marks.flush()\n"
        "threading.Thread(target=late).start()\n"
        "atexit.register(lambda: sys.stdout.write('bye'))  # flushed by no one but the exit\n"
    )
    done = _script(["version"], before)
    assert done.returncode == 0
    assert done.stdout.startswith("vaultmem ") and done.stdout.endswith("bye")
    assert marks.read_text().split() == ["thread", "handler"]

    failed = _script(["reconcile", "--vault", str(tmp_path / "no-vault"), "--json"])
    assert failed.returncode != 0
    assert json.loads(failed.stdout)["ok"] is False


def test_a_long_lived_command_leaves_through_the_interpreters_own_exit() -> None:
    done = _script(["watch", "--help"], "import os\nos._exit = None  # must not be called")
    assert done.returncode == 0, done.stderr
    assert "watch" in done.stdout


# Not needed by an agent's hook (`vaultmem hook session-start`): it skips typer for its own path.
NOT_FOR_A_HOOK = (
    "click",
    "rich",
    "pydantic",
    "watchfiles",
    "mcp",
    "vaultmem.okf",
    "vaultmem.setup",
    "vaultmem.adapters.cli",
    "vaultmem.index.reconcile",
    "vaultmem.memory.topic_store",
    "mistune",
    "vaultmem.core.note_model",  # topics' properties are read, never a parsed note built
    "numpy",
    "tokenizers",
    "multiprocessing",
)


def test_a_session_start_hook_loads_only_what_it_needs(tmp_path: Path) -> None:
    root = tmp_path
    (root / "note.md").write_text("# Note\n\nrun the tests\n", encoding="utf-8")
    Vault.init(root)
    Vault(root).reconcile()
    Vault(root).store("build", "Run make test.", scope="global")
    code = (
        "import io, sys\n"
        "from vaultmem import __main__ as entry\n"
        f"sys.argv = ['vaultmem', 'hook', 'session-start', '--vault', {str(root)!r}]\n"
        "sys.stdin = io.TextIOWrapper(io.BytesIO(b'{}'))\n"
        "out, sys.stdout = sys.stdout, io.StringIO()\n"
        "assert entry.main() == 0\n"
        "given, sys.stdout = sys.stdout.getvalue(), out\n"
        "assert 'build' in given, given\n"
    )
    loaded = _loaded(code, cwd=root)
    assert "vaultmem.memory.context" in loaded  # the block was built
    assert _offenders(loaded, NOT_FOR_A_HOOK) == []
