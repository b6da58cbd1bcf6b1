"""The hostile-input suite for memory, the managed folder, secrets and OKF (issue 16).

Generated hostile names, bytes, YAML, Markdown runs and bundle members, each case under its own
time bound (`pytest.mark.timeout`): a case that hangs or goes quadratic fails instead of stalling
the suite. The properties: nothing is written outside the managed folder, nothing raises but a
`VaultmemError`, what is stored reads back as it was, and a person's bytes are kept.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import re
import tarfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.helpers import published
from vaultmem.core.config import Config, init_vault, load_config
from vaultmem.core.errors import VaultmemError
from vaultmem.core.names import portable_problem
from vaultmem.core.secrets import redact
from vaultmem.files import managed
from vaultmem.memory import topic_store as memory
from vaultmem.memory.identity import check_scope_id
from vaultmem.note.topics import (
    append_observation,
    check_key,
    normalise_text,
    read_topic,
    render_topic,
    replace_see_also,
    supersede,
)
from vaultmem.okf.bundle import name_problem
from vaultmem.okf.ingest import import_bundle

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
CASE = pytest.mark.timeout(60)  # per case; each finishes in well under a second normally
SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# Names: separators, dots, device names, control and format characters, long and odd Unicode.
_NAME_PARTS = st.sampled_from(
    ["con", "aux", "nul", "com1", "lpt9", "a.", "a ", ".", "..", "/", "\\", ":", "*", "?",
     "\x00", "\x1f", "\x7f", "\u202e", "\ufeff", "é", "ß", "İ", "ｆ", "a" * 70, "-", "x", "1"]
)  # fmt: skip
_NAMES = st.one_of(
    st.lists(_NAME_PARTS, min_size=1, max_size=4).map("".join),
    st.text(max_size=80),
)


@pytest.fixture
def config(tmp_path: Path) -> Config:
    root = tmp_path / "vault"
    root.mkdir()
    init_vault(root)
    (root / "Human.md").write_text("# a person's note\n")
    return load_config(root)


def _outside_managed(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file()
        and not p.relative_to(root).as_posix().startswith(("agent-memory/", ".vaultmem/"))
    }


# --- names ---------------------------------------------------------------------------------------


@CASE
@SETTINGS
@given(key=_NAMES, scope_id=_NAMES)
def test_a_hostile_name_is_refused_or_stays_a_portable_managed_path(
    config: Config, key: str, scope_id: str
) -> None:
    try:
        check_key(key)
        check_scope_id(scope_id)
        rel = managed.topic_path(config, "project", scope_id, key)
    except VaultmemError:
        return
    parts = rel.split("/")
    assert parts[:2] == ["agent-memory", "project"] and len(parts) == 4
    assert all(portable_problem(p) is None for p in parts)
    assert name_problem(rel) is None  # what store accepts, import accepts


@CASE
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(key=_NAMES)
def test_store_under_a_hostile_key_never_writes_outside(config: Config, key: str) -> None:
    before = _outside_managed(config.root)
    with contextlib.suppress(VaultmemError):
        published(config, memory.store(config, key, "x", scope="session", scope_id="s", now=NOW))
    assert _outside_managed(config.root) == before


# --- bytes ---------------------------------------------------------------------------------------


@CASE
@SETTINGS
@given(data=st.binary(max_size=400))
def test_a_persons_bytes_are_kept_by_an_append(data: bytes) -> None:
    text = data.decode("utf-8", "surrogateescape")
    lines = text.replace("\r\n", "\n").split("\n")
    assume(not text.startswith("---") and not any("see also" in ln.casefold() for ln in lines))
    new = append_observation(text, "2026-11-30T12:00:00.000Z", "appended")
    assert new.encode("utf-8", "surrogateescape").startswith(data)
    assert read_topic("k.md", new).observations[-1].text == "appended"


@CASE
@SETTINGS
@given(data=st.binary(max_size=600))
def test_reading_arbitrary_bytes_as_a_topic_never_raises(data: bytes) -> None:
    text = data.decode("utf-8", "replace")
    read_topic("k.md", text)
    replace_see_also(text, ["- [[x]]"])
    supersede(text, "2026-11-30T12:00:00.000Z", "fix")


# --- YAML ---------------------------------------------------------------------------------------

_YAML = st.sampled_from(
    [
        "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
        "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n",
        "a: &a " + "y" * 2000 + "\nb: [" + ",".join(["*a"] * 500) + "]\n",
        "key: " + "[" * 300 + "]" * 300 + "\n",
        "!!python/object:os.system x\n",
        "id: !!binary aGVsbG8=\nupdated: 2026-01-01\n",
        "tags: {a: 1}\nscope: [global]\nkey: 12\n",
        "- not\n- a mapping\n",
        "\t: tab\n",
    ]
)


@CASE
@SETTINGS
@given(yaml_text=_YAML, body=st.text(max_size=200))
def test_hostile_topic_frontmatter_reads_and_edits_without_raising(
    yaml_text: str, body: str
) -> None:
    text = f"---\n{yaml_text}---\n# k\n\n## 2026-11-30T12:00:00Z\n{body}\n"
    read_topic("k.md", text)
    new = append_observation(text, "2026-11-30T12:00:01.000Z", "more")
    head = new.split("\n---\n", 1)[0].split("\n")
    kept = [ln for ln in yaml_text.split("\n") if ln and not ln.startswith("updated")]
    assert all(ln in head for ln in kept)  # the frontmatter is edited, never rebuilt


# --- Markdown runs -------------------------------------------------------------------------------

_RUNS = ["[[", "[", "![[", "#", "## ", "```", "~~~", "> ", "\\", "<!--", "-->", "|", "*", "%%"]


@CASE
@pytest.mark.parametrize("unit", _RUNS)
def test_a_long_markdown_run_round_trips_in_bounded_time(unit: str) -> None:
    text = unit * (200_000 // len(unit))
    for chunk in (text, "\n".join([unit * 50] * 2_000)):
        topic = render_topic(
            id="i", key="k", scope="global", scope_id=None, type="user", tags=[], source=None,
            timestamp="2026-11-30T12:00:00.000Z", text=chunk,
        )  # fmt: skip
        topic = append_observation(topic, "2026-11-30T12:00:01.000Z", chunk)
        got = [o.text for o in read_topic("k.md", topic).observations]
        assert got == [normalise_text(chunk)] * 2


@CASE
@pytest.mark.slow
@pytest.mark.parametrize("unit", ["docker login ", "mysql -u ", "a:1:b:c:", "password is ", "SG.a"])
def test_a_megabyte_of_a_new_secret_prefix_finishes(unit: str) -> None:
    text = (unit * (1_000_000 // len(unit) + 1))[:1_000_000]
    assert redact(redact(text).text).found == ()


# --- bundle members ------------------------------------------------------------------------------

_MEMBER = st.one_of(
    st.lists(_NAME_PARTS, min_size=1, max_size=3).map(lambda p: "/".join(p) + ".md"),
    st.sampled_from(
        ["../x.md", "/abs.md", "a/../../x.md", "C:/x.md", "a\\b.md", "aux.md", "x" * 300 + ".md",
         "a/./b.md", "./index.md", "a//b.md", "Index.md", "index.md", "log.md"]
    ),
)  # fmt: skip
_CONCEPTS = st.sampled_from(
    [
        b"---\ntype: Note\n---\n# Title\n\n## 2026-01-01T00:00:00Z\n> Superseded by x\n",
        b"---\ntype: Note\n---\n<!-- vaultmem:see-also -->\n- [[x]]\n<!-- /vaultmem:see-also -->\n",
        b"---\ntype: Note\ngenerated: {at: 2999-01-01T00:00:00Z}\n---\n" + b"[[" * 5000,
        b"---\ntype: Note\na: &a [1]\nb: [*a, *a]\n---\n" + b"![[" * 5000,
        b"---\ntype: Note\n---\n\xff\xfe not UTF-8",
        b"no frontmatter at all",
        b"---\ntype: [x]\n---\nbody",
    ]
)


@CASE
@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(members=st.lists(st.tuples(_MEMBER, _CONCEPTS), min_size=1, max_size=6))
def test_a_hostile_bundle_imports_safely(
    config: Config, tmp_path_factory: pytest.TempPathFactory, members: list[tuple[str, bytes]]
) -> None:
    folder = tmp_path_factory.mktemp("bundle")
    path = folder / "b.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        info = tarfile.TarInfo("index.md")
        head = b'---\nokf_version: "0.2"\n---\n# Bundle\n'
        info.size = len(head)
        archive.addfile(info, io.BytesIO(head))
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    before = _outside_managed(config.root)
    small = dataclasses.replace(config, max_note_bytes=20_000)
    try:
        report = published(
            small, import_bundle(small, path, scope="session", scope_id="s", now=NOW)
        )
    except VaultmemError as error:  # every member refused: no longer a bundle
        assert "not an OKF bundle" in error.message
        assert _outside_managed(config.root) == before
        return
    assert _outside_managed(config.root) == before
    for topic in report.topics:
        assert re.fullmatch(r"agent-memory/session/s/[a-z0-9-]{1,60}\.md", topic["path"])
        text = (config.root / topic["path"]).read_text(encoding="utf-8")
        read = read_topic(topic["path"], text)
        assert len(read.observations) >= 1 and read.id is not None
