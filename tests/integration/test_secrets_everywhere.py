"""No secret reaches an agent: tokens planted in every field a note, topic, link, name and bundle
can hold never show in any command's `--json`, any MCP tool's answer or any table of the index.

The commands and tools are enumerated from the contract table (`adapters.commands`): a new
operation fails `test_every_operation_is_driven` until it gets a call here, so it is covered
from its first day. A planted token is looked for by its random body, case-folded, so a token
that an escape, an invisible character or lower-casing (tags, anchors, terms) changed around
is still found.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import anyio
import duckdb
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.helpers import index_of
from vaultmem.adapters import commands as operations
from vaultmem.adapters.cli import main
from vaultmem.storage.schema import table_docs
from vaultmem.vault import Vault


def _body(tag: str, n: int, alphabet: str = "abcdefghjkmnpqrstuvwxyz23456789") -> str:
    """A token body no other text holds: `tag` then letters and digits, `n` long."""
    filler = (alphabet * 4)[: n - len(tag)]
    return (tag + filler)[:n]


BODIES: list[str] = []


def _ghp(tag: str) -> str:
    body = _body("Q" + tag, 36)
    BODIES.append(body)
    return "ghp_" + body


def _xoxb(tag: str) -> str:
    body = _body("q" + tag, 12)
    BODIES.append("1234567890-" + body)
    return "xoxb-1234567890-" + body


def _glpat(tag: str) -> str:
    body = _body("w" + tag, 20)
    BODIES.append(body)
    return "glpat-" + body


def _akia(tag: str) -> str:
    body = _body("Z" + tag.upper(), 16, "ABCDEFGHJKMNPQRSTUVWXYZ23456789")
    BODIES.append(body)
    return "AKIA" + body


TITLE = _ghp("title")
ALIAS = _glpat("alias")
TAG = _xoxb("tag")
KEY_NAME = _ghp("fmkey")
PROPERTY_LINK = _ghp("proplink")
HEADING = _akia("heading")
ESCAPED = _ghp("escaped").replace("_", "\\_", 1)  # ghp\_…
ENTITY = _ghp("entity").replace("_", "&#95;", 1)  # ghp&#95;…
INVISIBLE = "g\u200ehp_" + _ghp("invisible")[4:]  # a left-to-right mark inside the prefix
BIDI = "xo\u2066xb-" + _xoxb("bidi")[5:]
LINK_TARGET = _ghp("target")
LINK_DISPLAY = _ghp("display")
MD_LINK_TEXT = _glpat("mdtext")
FIELD_LINK = _xoxb("field")
INLINE_TAG = _xoxb("inline")
FILE_NAME = _xoxb("file")
FOLDER_NAME = _glpat("folder")
TOPIC_TEXT = _ghp("topictext")
TOPIC_TAG = _xoxb("topictag")
TOPIC_SOURCE = _ghp("topicsource")
TOPIC_FILE = _xoxb("topicfile")
BUNDLE_MEMBER = _xoxb("member")
BUNDLE_KEY = _glpat("bundlekey")
BUNDLE_BODY = _akia("bundlebody")
STORED = _ghp("stored")
PASSWORD_NUMBER = "87654321"
PASSWORD_ESCAPED = "hunter2x9q"
PASSWORD_EMPHASIS = "hunter3x8w"  # after `pass**word**:`, which a reader sees as `password:`
TOKEN_EMPHASIS = "tok9val7zk"  # after `to*ke*n:`
BODIES += [PASSWORD_NUMBER, PASSWORD_ESCAPED, PASSWORD_EMPHASIS, TOKEN_EMPHASIS]

NOTE = f"""---
title: Deploy with {TITLE}
password: {PASSWORD_NUMBER}
aliases: [alias {ALIAS}]
tags: [{TAG}]
{KEY_NAME}: yes
related: "[[Other {PROPERTY_LINK}]]"
---
# Deploy

## Rotate {HEADING}

The old one was {ESCAPED} and then {ENTITY}, also {INVISIBLE} and {BIDI}.
password\\: {PASSWORD_ESCAPED}
pass**word**: {PASSWORD_EMPHASIS}
The to*ke*n: {TOKEN_EMPHASIS}
See [[Target {LINK_TARGET}]] and [[Other|see {LINK_DISPLAY}]] and [text {MD_LINK_TEXT}](Other.md).
rel:: [[{FIELD_LINK}]]
#{INLINE_TAG} deploy
"""


def _plant(vault: Path, tmp_path: Path) -> Path:
    """Tokens in a note's every field, a file name, a folder name, a hand-edited topic and a
    bundle; returns the bundle's folder."""
    knowledge = vault / "Knowledge"
    (knowledge / "Deploy.md").write_text(NOTE, encoding="utf-8")
    (knowledge / "Other.md").write_text("# Other\n\nA clean note about deploy.\n", encoding="utf-8")
    (knowledge / f"{FILE_NAME}.md").write_text("# Named\n\ndeploy notes\n", encoding="utf-8")
    (knowledge / FOLDER_NAME).mkdir()
    (knowledge / FOLDER_NAME / "Inner.md").write_text("# Inner\n\ndeploy\n", encoding="utf-8")
    v = Vault(vault)
    v.reconcile()
    v.store("deploy-notes", f"Deploy with {TOPIC_TEXT}.", scope="project", scope_id="atlas")
    topic = vault / "agent-memory" / "project" / "atlas" / "deploy-notes.md"
    text = topic.read_text(encoding="utf-8")
    text = text.replace("tags: []", f"tags: [{TOPIC_TAG}]").replace(
        "source: ", f"source: {TOPIC_SOURCE} ", 1
    )
    topic.write_text(text, encoding="utf-8")
    (topic.parent / f"{TOPIC_FILE}.md").write_text(
        text.replace("deploy-notes", "other-notes"), encoding="utf-8"
    )
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "index.md").write_text('---\nokf_version: "0.2"\n---\n', encoding="utf-8")
    (bundle / f"{BUNDLE_MEMBER}.md").write_text(
        "---\ntype: Note\ntitle: Member\n---\nA member named after a token.\n", encoding="utf-8"
    )
    (bundle / "keyed.md").write_text(
        f"---\ntype: Note\ntitle: Keyed\nvaultmem:\n  key: {BUNDLE_KEY}\n---\nKeyed.\n",
        encoding="utf-8",
    )
    (bundle / "plain.md").write_text(
        f"---\ntype: Note\ntitle: Plain\n---\nThe key is {BUNDLE_BODY} here.\n", encoding="utf-8"
    )
    v.reconcile()
    v.close()
    return bundle


def _calls(vault: Path, tmp_path: Path, bundle: Path) -> dict[str, list[list[str]]]:
    """Operation name → CLI argument lists (without --vault/--json), in the order run."""
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    return {
        "init": [[str(fresh)]],
        "reconcile": [[]],
        "rebuild": [[]],
        "status": [[]],
        "problems": [[]],
        "show": [["Deploy"], ["Knowledge/Deploy.md"], [f"Knowledge/{FILE_NAME}.md"]],
        "links": [["Deploy"], ["Other", "--direction", "backlinks"]],
        "backlinks": [["Other"]],
        "unresolved": [[]],
        "search": [["deploy"], ["rotate"], ["ghp"], ["password"]],
        "sql": [[f"SELECT * FROM {t.name}"] for t in table_docs()],
        "parse": [[str(vault / "Knowledge" / "Deploy.md")]],
        "store": [["stored-topic", f"Keep {STORED} safe.", "--scope", "project",
                   "--scope-id", "atlas"]],
        "correct": [["stored-topic", f"Now {STORED}.", "--scope", "project",
                     "--scope-id", "atlas"]],
        "get": [["deploy-notes", "--scope", "project", "--scope-id", "atlas"]],
        "prune": [[]],
        "relate": [["Deploy", "Other"]],
        "edges": [[]],
        "accept": [["no-such-edge"]],
        "reject": [["no-such-edge"]],
        "recall": [["deploy"], ["rotate the key"]],
        "read": [["Deploy"], ["Deploy#Rotate"]],
        "recent": [[]],
        "used": [["Deploy"]],
        "context": [[], ["--write", "codex", "--project", str(tmp_path / "project")]],
        "export okf": [[str(tmp_path / "out-all")],
                       [str(tmp_path / "out-knowledge"), "--folder", "Knowledge"],
                       [str(tmp_path / "out-redacted"), "--folder", "Knowledge", "--redact"],
                       [str(tmp_path / "out.zip"), "--folder", "Knowledge", "--redact",
                        "--format", "zip"]],
        "import okf": [[str(bundle), "--scope", "project", "--scope-id", "atlas"]],
        "validate okf": [[str(bundle)]],
        "forget": [["deploy-notes", "--scope", "project", "--scope-id", "atlas"]],
        "export parquet": [[str(tmp_path / "out-parquet")]],
        "setup": [["claude", "--project", str(tmp_path / "project"), "--dry-run"]],
        "version": [[]],
        # Not driven in-process, with the reason (each is covered elsewhere):
        "watch": [],  # runs until SIGINT; its events are counts, checked by tests/index/test_watch
        "hook": [],  # reads the agent's JSON on stdin: driven as a subprocess below
    }  # fmt: skip


def _leaks(text: str) -> list[str]:
    folded = text.casefold()
    return [body for body in BODIES if body.casefold() in folded]


def _cli(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    capsys.readouterr()
    main(argv)
    captured = capsys.readouterr()
    return captured.out + captured.err


def test_every_operation_is_driven(tmp_path: Path) -> None:
    names = {op.name for op in operations.OPERATIONS}
    assert set(_calls(tmp_path, tmp_path, tmp_path)) == names


@pytest.mark.slow
def test_no_secret_in_any_output_or_table(
    example_vault: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "project").mkdir()
    bundle = _plant(example_vault, tmp_path)
    leaks: dict[str, list[str]] = {}
    for name, calls in _calls(example_vault, tmp_path, bundle).items():
        for args in calls:
            grouped = ("export okf", "export parquet", "import okf", "validate okf")
            words = name.split() if name in grouped else [name]
            argv = [*words, *args, "--json"]
            if name == "version":
                argv = ["version", "--json"]
            elif name not in ("init", "validate okf"):
                argv += ["--vault", str(example_vault)]
            found = _leaks(_cli(capsys, argv))
            if found:
                leaks[" ".join(argv[: len(words) + 1])] = found
    written = {
        str(path.relative_to(tmp_path)): path.read_bytes()
        for path in [tmp_path / "project" / "AGENTS.md", *tmp_path.glob("out-*/**/*")]
        if path.is_file()
    }
    with zipfile.ZipFile(tmp_path / "out.zip") as archive:
        written |= {f"out.zip:{name}": archive.read(name) for name in archive.namelist()}
    assert "project/AGENTS.md" in written and any(n.startswith("out.zip:") for n in written)
    for name, data in written.items():
        found = _leaks(name) + _leaks(data.decode("utf-8", "replace"))
        if found:
            leaks[name] = found
    for event, stdin in (
        ("session-start", {"cwd": str(tmp_path / "project"), "session_id": "s1"}),
        ("prompt", {"cwd": str(tmp_path / "project"), "session_id": "s1", "prompt": "deploy"}),
    ):
        hook = subprocess.run(
            [sys.executable, "-m", "vaultmem", "hook", event, "--vault", str(example_vault)],
            input=json.dumps(stdin), capture_output=True, text=True, check=False,
        )  # fmt: skip
        if found := _leaks(hook.stdout + hook.stderr):
            leaks[f"hook {event}"] = found
    leaks.update(_index_leaks(example_vault))
    assert not leaks, json.dumps(leaks, indent=1)
    # The planted notes were indexed and searched, not skipped: the test saw real data.
    assert "secret_in_name" in _cli(capsys, ["problems", "--vault", str(example_vault), "--json"])


def _index_leaks(vault: Path) -> dict[str, list[str]]:
    con = duckdb.connect(str(index_of(vault)), read_only=True)
    try:
        out = {}
        for table in table_docs():
            rows = con.execute(f"SELECT * FROM {table.name}").fetchall()
            found = _leaks(json.dumps(rows, default=str, ensure_ascii=False))
            if found:
                out[f"table {table.name}"] = found
        return out
    finally:
        con.close()


def _tool_calls() -> dict[str, list[dict[str, Any]]]:
    atlas = {"scope": "project", "scope_id": "atlas"}
    return {
        "memory_status": [{}],
        "memory_search": [{"query": "deploy"}, {"query": "rotate"}],
        "memory_recall": [{"query": "deploy"}],
        "memory_read": [{"note": "Deploy"}],
        "memory_recent": [{}],
        "memory_used": [{"note": "Deploy"}],
        "memory_links": [{"note": "Deploy"}, {"note": "Other", "direction": "backlinks"}],
        "memory_context": [{}],
        "memory_store": [{"key": "mcp-topic", "content": f"Keep {STORED}.", **atlas}],
        "memory_get": [{"key": "deploy-notes", **atlas}],
        "memory_correct": [{"key": "mcp-topic", "content": f"Now {STORED}.", **atlas}],
        "memory_relate": [{"a": "Deploy", "b": "Other"}],
        "memory_reconcile": [{}],
        "memory_forget": [{"key": "deploy-notes", **atlas}],
    }


def _mcp_server(vault: Path) -> StdioServerParameters:
    """The real MCP server on `vault`, in this test's state folder."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "vaultmem", "mcp", "--vault", str(vault)],
        cwd=str(vault.parent),
        env={k: v for k, v in os.environ.items() if not k.startswith("VAULTMEM_")}
        | {"VAULTMEM_STATE_DIR": os.environ["VAULTMEM_STATE_DIR"]},
    )


@pytest.mark.slow
def test_no_secret_in_any_mcp_tool(example_vault: Path, tmp_path: Path) -> None:
    _plant(example_vault, tmp_path)
    calls = _tool_calls()
    assert set(calls) == {op.tool for op in operations.OPERATIONS if op.tool}
    params = _mcp_server(example_vault)
    leaks: dict[str, list[str]] = {}
    answered: list[str] = []

    async def run() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for name, arguments_list in calls.items():
                for arguments in arguments_list:
                    result = await session.call_tool(name, arguments)
                    text = result.content[0].text  # type: ignore[union-attr]
                    answered.append(text)
                    found = _leaks(text)
                    if found:
                        leaks[f"{name} {arguments}"] = found

    anyio.run(run)
    assert not leaks, json.dumps(leaks, indent=1)
    assert any("Deploy" in text for text in answered)


def _run(vault: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vaultmem", *args, "--vault", str(vault)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip


@pytest.mark.slow
def test_a_note_named_after_a_token_is_read_by_its_id_alone(
    example_vault: Path, tmp_path: Path
) -> None:
    """A note whose file or folder name holds a secret is not indexed; its `secret_in_name`
    problem names the id it is read by, and `read` of that id (CLI and MCP) gives its text with
    path, title and frontmatter redacted. Its real path or title finds nothing."""
    _plant(example_vault, tmp_path)
    problems = _run(example_vault, "problems", "--code", "secret_in_name", "--json")
    listed = json.loads(problems.stdout)
    rows = {row["path"]: row["message"] for row in listed["data"]}
    assert not _leaks(json.dumps(rows))
    file_row = rows["Knowledge/[redacted:slack-token].md"]
    folder_note_row = rows["Knowledge/[redacted:gitlab-token]/Inner.md"]
    assert "rename" in rows["Knowledge/[redacted:gitlab-token]"]  # the folder keeps its row
    by_id = {
        "file": file_row.split("vaultmem read ")[1].split("`")[0],
        "folder": folder_note_row.split("vaultmem read ")[1].split("`")[0],
    }
    outputs: list[str] = []
    for which, note_id in by_id.items():
        answer = _run(example_vault, "read", note_id, "--json")
        assert answer.returncode == 0, answer.stdout + answer.stderr
        data = json.loads(answer.stdout)["data"]
        assert data["id"] == note_id
        assert data["path"] == (
            "Knowledge/[redacted:slack-token].md"
            if which == "file"
            else "Knowledge/[redacted:gitlab-token]/Inner.md"
        )
        assert ("deploy notes" if which == "file" else "deploy") in data["text"]
        human = _run(example_vault, "read", note_id)
        assert human.returncode == 0 and "deploy" in human.stdout
        outputs += [answer.stdout + answer.stderr, human.stdout + human.stderr]
    for other in (f"Knowledge/{FILE_NAME}.md", f"Knowledge/{FILE_NAME}", FILE_NAME,
                  f"Knowledge/{FOLDER_NAME}/Inner.md", "Inner"):  # fmt: skip
        for json_flag in (("--json",), ()):
            missed = _run(example_vault, "read", other, *json_flag)
            assert missed.returncode != 0, (other, missed.stdout)
            outputs.append(missed.stdout + missed.stderr)
    assert not [_leaks(text) for text in outputs if _leaks(text)]

    params = _mcp_server(example_vault)
    answered: list[str] = []

    async def run() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            for note in (by_id["file"], f"Knowledge/{FILE_NAME}.md"):
                result = await session.call_tool("memory_read", {"note": note})
                answered.append(result.content[0].text)  # type: ignore[union-attr]

    anyio.run(run)
    assert "deploy notes" in answered[0] and "[redacted:slack-token]" in answered[0]
    assert "deploy notes" not in answered[1]
    assert not [_leaks(text) for text in answered if _leaks(text)]
