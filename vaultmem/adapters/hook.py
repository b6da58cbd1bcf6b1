"""`vaultmem hook session-start|prompt|pre-compact`: what an agent's hook prints for its model.

Claude Code and Codex run a hook command with the event's JSON on stdin (`cwd`, `session_id`,
`prompt`, `source`) and give what it prints on stdout to the model. So:

- **session-start** prints the context block of the project of `cwd` and the global scope
  (`Vault.context`), within `--budget-chars` (default 10,000: Claude Code passes at most that
  many characters whole; more becomes a preview).
- **prompt** prints the memories that answer the prompt (`Vault.recall` over the same scopes)
  within a third of that budget: only hits whose key, title or snippet holds at least
  `RELEVANCE_FLOOR` of the prompt's search terms (benchmarks/bench_hook.py measures it), and
  never an entry already given in this session.
- **pre-compact** prints instructions for the summary (Claude Code takes a PreCompact hook's
  stdout as the compaction's custom instructions): keep the memory the work used, and list what
  is worth storing.

What was given in a session is machine-local state, not memory: a small JSON file per session
in the vault's state folder outside the vault (`<state>/hooks/`, ids only, at most `MAX_GIVEN`
per session); session files unused for `SESSION_TTL_S` are removed, at most `MAX_SESSIONS` are
kept, and a new start, `/clear` or a compaction of a session starts its list afresh.

A hook never stands in the agent's way: it always exits 0 and never prints a traceback; bad
input, no vault, no index or any failure is said in one line starting `vaultmem:`. The work runs
in a thread the hook waits for at most `--time-budget-s` (default 5 s, half the agents' own
10 s hook timeout); past it the hook prints one line and exits at once. This module is the hook's
whole import path from `vaultmem/__main__.py`: no click, rich or mcp.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

EVENTS = ("session-start", "prompt", "pre-compact")
BUDGET_CHARS = 10_000
"""The session-start block's budget: Claude Code hands a hook's stdout of at most 10,000
characters to the model whole."""
PROMPT_SHARE = 3
"""A prompt's memories get at most a third of the budget."""
TIME_BUDGET_S = 5.0
RELEVANCE_FLOOR = 0.5
"""A prompt's hit must hold at least this share of the prompt's search terms (measured:
benchmarks/bench_hook.py)."""
PROMPT_LIMIT = 8
MAX_STDIN_BYTES = 1_000_000
MAX_GIVEN = 500
MAX_SESSIONS = 200
SESSION_TTL_S = 3 * 86_400
STATE_FOLDER = "hooks"
NOTE = "vaultmem:"
PROMPT_OPEN = "<vaultmem-recall>"
PROMPT_HEADER = "## Memory related to this prompt (vaultmem)"
PROMPT_CLOSE = "</vaultmem-recall>"
PRE_COMPACT = (
    "vaultmem: when summarising, keep the facts from the <vaultmem-memory> and "
    "<vaultmem-recall> blocks that the work relied on, and end the summary with the durable "
    "facts and decisions learned in this session that are not yet stored, one line each, so "
    "they can be saved with memory_store (vaultmem store KEY TEXT)."
)


class _Usage(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # a hook never exits 2
        raise _Usage(message)


def _parser() -> _Parser:
    parser = _Parser(prog="vaultmem hook", add_help=False)
    parser.add_argument("event")
    parser.add_argument("--vault")
    parser.add_argument("--budget-chars", type=int, default=BUDGET_CHARS)
    parser.add_argument("--time-budget-s", type=float, default=TIME_BUDGET_S)
    return parser


def main(argv: Sequence[str], stdin: IO[bytes] | None = None, stdout: IO[str] | None = None) -> int:
    """Parse `argv` (`EVENT [--vault PATH] [--budget-chars N] [--time-budget-s S]`), run the
    hook and print its output. Always 0."""
    out = stdout or sys.stdout
    if any(a in ("-h", "--help") for a in argv):  # people, not agents: the CLI's own help
        from vaultmem.adapters.cli import main as cli

        return cli(["hook", "--help"])
    try:
        args = _parser().parse_args(list(argv))
    except _Usage as error:
        _print(out, f"{NOTE} bad hook arguments ({error}); no memory given.")
        return 0
    return run(
        args.event,
        vault=args.vault,
        budget_chars=args.budget_chars,
        time_budget_s=args.time_budget_s,
        stdin=stdin,
        stdout=out,
    )


def run(
    event: str,
    *,
    vault: str | None = None,
    budget_chars: int = BUDGET_CHARS,
    time_budget_s: float = TIME_BUDGET_S,
    stdin: IO[bytes] | None = None,
    stdout: IO[str] | None = None,
) -> int:
    """Run one hook within `time_budget_s`; print its text or one `vaultmem:` line. Always 0."""
    out = stdout or sys.stdout
    if event not in EVENTS:
        _print(out, f"{NOTE} unknown hook {event!r} (use {', '.join(EVENTS)}); no memory given.")
        return 0
    if budget_chars < 200 or not time_budget_s > 0:
        _print(out, f"{NOTE} --budget-chars must be at least 200 and --time-budget-s positive.")
        return 0
    result: list[str] = []
    worker = threading.Thread(
        target=_work,
        args=(event, vault, budget_chars, stdin or sys.stdin.buffer, result),
        daemon=True,
    )
    worker.start()
    worker.join(time_budget_s)
    if worker.is_alive():
        _print(out, f"{NOTE} memory lookup took longer than {time_budget_s:g} s; skipped.")
        os._exit(0)  # the worker may sit in the index: do not wait for it
    _print(out, result[0] if result else f"{NOTE} the hook failed; no memory given.")
    return 0


def _print(out: IO[str], text: str) -> None:
    try:
        if text:
            out.write(text if text.endswith("\n") else text + "\n")
        out.flush()
    except (OSError, ValueError):
        pass  # the agent closed our stdout: nothing to tell it


def _work(event: str, vault: str | None, budget: int, stdin: IO[bytes], result: list[str]) -> None:
    try:
        result.append(_answer(event, vault, budget, stdin))
    except Exception as error:  # a hook never shows a traceback
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        result.append(f"{NOTE} {message[:300]}; no memory given.")


def _read_payload(stdin: IO[bytes]) -> dict[str, Any] | None:
    raw = stdin.read(MAX_STDIN_BYTES + 1)
    if len(raw) > MAX_STDIN_BYTES:
        return None
    try:
        payload = json.loads(raw or b"{}")
    except ValueError:
        return None
    return payload if isinstance(payload, dict) else None


def _answer(event: str, vault_path: str | None, budget: int, stdin: IO[bytes]) -> str:
    payload = _read_payload(stdin)
    if payload is None:
        return f"{NOTE} the hook's input was not a JSON object; no memory given."
    if event == "pre-compact":
        return PRE_COMPACT
    cwd = Path(str(payload.get("cwd") or os.getcwd()))
    session = str(payload.get("session_id") or "")

    from vaultmem.core.errors import VaultmemError
    from vaultmem.vault import Vault

    try:
        vault = Vault(vault_path, cwd=cwd if cwd.is_dir() else None)
    except VaultmemError as error:
        return (
            f"{NOTE} no vault ({error}); pass --vault to the hook command or set "
            "VAULTMEM_VAULT. No memory given."
        )
    index = vault.config.index_path
    if not index.exists():
        return (
            f"{NOTE} the vault {vault.root} has no index yet; run "
            f"`vaultmem reconcile --vault {vault.root}`. No memory given."
        )
    folder = cwd if cwd.is_dir() else None
    state = _SessionState(vault.config.state_dir / STATE_FOLDER, session)
    if event == "session-start":
        return _session_start(vault, folder, budget, state, str(payload.get("source") or ""))
    prompt = str(payload.get("prompt") or "").strip()
    if not prompt:
        return ""
    return _prompt(vault, folder, prompt, budget // PROMPT_SHARE, state)


def _session_start(
    vault: Any, folder: Path | None, budget: int, state: _SessionState, source: str
) -> str:
    project = project_of(vault, folder)
    block = vault.context(scopes=(f"project:{project}", "global"), budget_chars=budget)
    state.sweep()
    state.save([e.id for e in block.entries], fresh=True)
    if not block.entries:
        return (
            f"{NOTE} no memories yet for project {project} or global; store lasting facts "
            "with memory_store."
        )
    return str(block.text)


def _prompt(vault: Any, folder: Path | None, prompt: str, budget: int, state: _SessionState) -> str:
    from vaultmem.memory.context import ENTRY_MAX_CHARS
    from vaultmem.memory.recall import clip_words, one_line

    project = project_of(vault, folder)
    given = set(state.load())
    hits = vault.recall(prompt, scopes=[f"project:{project}", "global"], limit=PROMPT_LIMIT)
    terms = prompt_terms(prompt)
    lines: list[str] = []
    ids: list[str] = []
    left = budget - len(PROMPT_OPEN) - len(PROMPT_HEADER) - len(PROMPT_CLOSE) - 3
    for hit in hits:
        if hit.id in given or hit.related:
            continue
        if coverage(terms, f"{hit.key} {hit.title} {hit.snippet}") < RELEVANCE_FLOOR:
            continue
        name = hit.key if hit.managed else hit.title
        snippet = clip_words(one_line(hit.snippet), ENTRY_MAX_CHARS)
        line = f"- [{hit.scope}] {one_line(name)}: {snippet}"
        if len(line) + 1 > left:
            continue
        left -= len(line) + 1
        lines.append(line)
        ids.append(hit.id)
    if not lines:
        return ""
    state.save([*given, *ids])
    return "\n".join([PROMPT_OPEN, PROMPT_HEADER, *lines, PROMPT_CLOSE])


def project_of(vault: Any, folder: Path | None) -> str:
    """The project a write without a scope id from `folder` goes to (`Vault.store`'s rule):
    the hook reads that project's topics and never another's."""
    return str(vault.project(folder).scope_id)


def prompt_terms(text: str) -> frozenset[str]:
    """The prompt's search terms: its words as search tokenises them, stop words left out."""
    from vaultmem.core.tokenizer import is_stopword, tokenize

    return frozenset(t for t in tokenize(text) if not is_stopword(t))


def coverage(terms: frozenset[str], text: str) -> float:
    """The share of `terms` that `text` holds (0 when there are no terms)."""
    if not terms:
        return 0.0
    return len(terms & prompt_terms(text)) / len(terms)


class _SessionState:
    """The ids given to one session, in `folder/<digest of the session id>.json`."""

    def __init__(self, folder: Path, session: str) -> None:
        self.folder = folder
        digest = hashlib.blake2b(session.encode(), digest_size=12).hexdigest()
        self.path = folder / f"{digest}.json" if session else None

    def load(self) -> list[str]:
        if self.path is None:
            return []
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        given = data.get("given") if isinstance(data, dict) else None
        return [str(i) for i in given] if isinstance(given, list) else []

    def save(self, ids: Sequence[str], *, fresh: bool = False) -> None:
        if self.path is None:
            return
        from vaultmem.core.atomic import replace_file

        kept = list(dict.fromkeys(ids if fresh else [*self.load(), *ids]))[-MAX_GIVEN:]
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            replace_file(self.path, json.dumps({"given": kept}).encode())
        except OSError:
            pass  # a lost list only means an entry may be given twice

    def sweep(self, now: float | None = None) -> None:
        """Drop session files unused for SESSION_TTL_S, and the oldest beyond MAX_SESSIONS."""
        moment = time.time() if now is None else now
        try:
            files = [(p.stat().st_mtime, p) for p in self.folder.glob("*.json")]
        except OSError:
            return
        files.sort(reverse=True)
        for rank, (mtime, path) in enumerate(files):
            if rank >= MAX_SESSIONS or moment - mtime > SESSION_TTL_S:
                with contextlib.suppress(OSError):
                    path.unlink()
