"""The vault walk, exclusions, droppings, symlinks and the careful read of one note."""

from __future__ import annotations

from pathlib import Path
from typing import BinaryIO

import pytest

from vaultmem.core.config import Config, FolderMapping, load_config
from vaultmem.core.note_model import Problem
from vaultmem.files import scan
from vaultmem.files.scan import (
    Fingerprint,
    content_hash,
    is_dropping,
    is_eligible_note,
    read_note,
    scan_paths,
    scan_vault,
    secret_named_note,
)


def make(root: Path, *paths: str, text: str = "# note\n") -> None:
    for path in paths:
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def whole_vault(root: Path, *, exclude: tuple[str, ...] = (), **kw: int) -> Config:
    return Config(
        root=root.resolve(),
        mappings=(FolderMapping("", "project", "v"),),
        exclude=exclude,
        **kw,  # type: ignore[arg-type]
    )


def note_paths(config: Config) -> list[str]:
    return [fp.path for fp in scan_vault(config).notes]


# -- the walk -----------------------------------------------------------------------------------


XOXB = "xoxb-1234567890-abcdefghij"
GLPAT = "glpat-abcdefghij0123456789"


def test_a_name_holding_a_secret_is_a_problem_per_note_with_its_id(tmp_path: Path) -> None:
    """A folder once, a plain file once, and every note (the folder's too) once more with the
    id `read` finds it by; `secret_named_note` gives that id's real path back."""
    from vaultmem.core.names import default_note_id

    make(tmp_path, f"K/{XOXB}.md", f"K/{GLPAT}/Inner.md", f"K/{GLPAT}/pic.png",
         f"K/{XOXB}.png", "K/plain.md", "Out/x.md")  # fmt: skip
    config = Config(root=tmp_path.resolve(), mappings=(FolderMapping("K", "project", "p"),))
    result = scan_vault(config)
    assert [fp.path for fp in result.notes] == ["K/plain.md"]
    rows = {(p.path, p.message) for p in result.problems if p.code == "secret_in_name"}
    file_id, inner_id = default_note_id(f"K/{XOXB}.md"), default_note_id(f"K/{GLPAT}/Inner.md")
    read = "not indexed; read it with `vaultmem read {}`, or rename it to index it"
    rename = "not indexed; rename the file or folder"
    assert rows == {
        ("K/[redacted:gitlab-token]", f"the name holds a secret (gitlab-token): {rename}"),
        ("K/[redacted:gitlab-token]/Inner.md",
         f"the name holds a secret (gitlab-token): {read.format(inner_id)}"),
        ("K/[redacted:slack-token].md",
         f"the name holds a secret (slack-token): {read.format(file_id)}"),
        ("K/[redacted:slack-token].png", f"the name holds a secret (slack-token): {rename}"),
    }  # fmt: skip
    assert secret_named_note(config, file_id) == f"K/{XOXB}.md"
    assert secret_named_note(config, inner_id) == f"K/{GLPAT}/Inner.md"
    assert secret_named_note(config, default_note_id("K/plain.md")) is None  # an indexed note
    assert secret_named_note(config, default_note_id(f"K/{XOXB}.png")) is None  # not a note


def test_notes_files_and_fingerprints(tmp_path: Path) -> None:
    make(tmp_path, "b.md", "a/x.md", "a/deep/y.md", "img.png", "a/doc.pdf", "UPPER.MD")
    config = whole_vault(tmp_path)
    result = scan_vault(config)
    assert [fp.path for fp in result.notes] == ["a/deep/y.md", "a/x.md", "b.md"]
    assert result.files == (
        "UPPER.MD",
        "a/deep/y.md",
        "a/doc.pdf",
        "a/x.md",
        "b.md",
        "img.png",
    )
    st = (tmp_path / "b.md").stat()
    assert result.notes[2] == Fingerprint("b.md", st.st_size, st.st_mtime_ns)
    assert result.problems == ()


def test_only_mapped_folders_give_notes_but_every_file_is_listed(tmp_path: Path) -> None:
    make(tmp_path, "Projects/p.md", "Projects2/q.md", "root.md", "Other/att.png", "Projects/i.png")
    config = Config(
        root=tmp_path.resolve(),
        managed_folder="Projects/mem",
        mappings=(FolderMapping("Projects", "project", "p"),),
    )
    result = scan_vault(config)
    assert [fp.path for fp in result.notes] == ["Projects/p.md"]
    assert set(result.files) == {
        "Projects/p.md",
        "Projects2/q.md",
        "root.md",
        "Other/att.png",
        "Projects/i.png",
    }


def test_always_excluded_hidden_folders_at_any_depth(tmp_path: Path) -> None:
    make(
        tmp_path,
        ".obsidian/workspace.md",
        ".trash/old.md",
        ".git/x.md",
        ".vaultmem/y.md",
        "agent-memory/.trash/deleted.md",
        "sub/.git/HEAD.md",
        "sub/.hidden.md",
        "agent-memory/global/kept.md",
        "sub/kept.md",
    )
    result = scan_vault(whole_vault(tmp_path))
    assert [fp.path for fp in result.notes] == ["agent-memory/global/kept.md", "sub/kept.md"]
    assert result.files == ("agent-memory/global/kept.md", "sub/kept.md")


@pytest.mark.parametrize(
    "name",
    [
        "Note.sync-conflict-20261120-101500-ABCDEFG.md",
        "Note (Dana's conflicted copy 2026-11-20).md",
        "Note (Conflicted Copy 2026-11-20 1200).md",
        ".~lock.Note.md#",
        ".#Note.md",
        "Note.md.tmp",
        "Note.TMP",
        ".Note.md.icloud",
        "Note.md.icloud",
        "Note.md~",
        "~$report.docx",
        ".DS_Store",
    ],
)
def test_droppings_are_skipped(tmp_path: Path, name: str) -> None:
    assert is_dropping(name)
    make(tmp_path, name, "real.md")
    assert scan_vault(whole_vault(tmp_path)).files == ("real.md",)


@pytest.mark.parametrize(
    "name", ["Note.md", "conflict resolution.md", "tmp notes.md", "C# tips.md", "a~b.md"]
)
def test_ordinary_names_are_not_droppings(name: str) -> None:
    assert not is_dropping(name)


def test_config_globs(tmp_path: Path) -> None:
    make(
        tmp_path,
        "Templates/t.md",
        "Templates/sub/t2.md",
        "Templatesque.md",
        "a/Templates/t3.md",
        "a/b.excalidraw.md",
        "README.md",
        "a/README.md",
        "drafts/one.md",
        "drafts/deep/two.md",
        "keep.md",
    )
    config = whole_vault(
        tmp_path,
        exclude=("/Templates/**", "*.excalidraw.md", "/README.md", "drafts/*"),
    )
    # "drafts/*" matches the folder drafts/deep too, which prunes everything below it.
    assert note_paths(config) == ["Templatesque.md", "a/README.md", "a/Templates/t3.md", "keep.md"]


def test_name_globs_match_at_any_depth(tmp_path: Path) -> None:
    make(tmp_path, "x/Templates/t.md", "Templates/u.md", "y/z.md", "y/[draft] plan.md")
    config = whole_vault(tmp_path, exclude=("Templates", "[[]draft]*", "**/z.md"))
    assert scan_vault(config).files == ()


def test_obsidian_user_ignore_filters(tmp_path: Path) -> None:
    make(tmp_path, "Archive/old.md", "Archived.md", "Notes/a.md", "Notes/b.canvas.md", "c.md")
    (tmp_path / ".obsidian").mkdir()
    (tmp_path / ".obsidian" / "app.json").write_text(
        '{"userIgnoreFilters": ["Archive", "/\\\\.canvas\\\\.md$/"]}'
    )
    config = load_config(tmp_path)
    # A plain entry is a raw prefix, as in Obsidian: "Archive" also hides "Archived.md".
    assert note_paths(config) == ["Notes/a.md", "c.md"]


def test_exclusions_never_hide_the_managed_folder(tmp_path: Path) -> None:
    make(tmp_path, "agent-memory/global/k.md", "Projects/agent-memory/x.md", "other/y.md")
    config = whole_vault(tmp_path, exclude=("agent-memory", "/^agent/", "other/**"))
    assert note_paths(config) == ["agent-memory/global/k.md"]


def test_exclusions_spare_the_folders_leading_to_the_managed_folder(tmp_path: Path) -> None:
    make(tmp_path, "Projects/mem/k.md", "Projects/a.md", "Projects/sub/b.md")
    config = Config(
        root=tmp_path.resolve(),
        managed_folder="Projects/mem",
        mappings=(FolderMapping("Projects", "project", "p"),),
        exclude=("Projects/**",),
    )
    assert note_paths(config) == ["Projects/mem/k.md"]


def test_missing_mapped_folder_is_a_problem(tmp_path: Path) -> None:
    make(tmp_path, "Notes/a.md")
    config = Config(
        root=tmp_path.resolve(),
        managed_folder="Notes/mem",
        mappings=(FolderMapping("Notes", "project", "n"), FolderMapping("Gone", "global", None)),
    )
    result = scan_vault(config)
    assert result.problems == (
        Problem("Gone", "config_folder_missing", "mapped folder 'Gone' (global) does not exist"),
    )
    assert [fp.path for fp in result.notes] == ["Notes/a.md"]


# -- symlinks -----------------------------------------------------------------------------------


def test_symlinks_escaping_the_vault_are_refused(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    outside = tmp_path / "outside"
    make(outside, "secret.md", "dir/inner.md")
    make(vault, "real.md")
    (vault / "leak.md").symlink_to(outside / "secret.md")
    (vault / "leakdir").symlink_to(outside / "dir", target_is_directory=True)
    result = scan_vault(whole_vault(vault))
    assert [fp.path for fp in result.notes] == ["real.md"]
    assert result.files == ("real.md",)
    assert [(p.path, p.code) for p in result.problems] == [
        ("leak.md", "symlink_refused"),
        ("leakdir", "symlink_refused"),
    ]
    assert isinstance(read_note(whole_vault(vault), "leak.md"), Problem)


def test_symlinks_inside_the_vault(tmp_path: Path) -> None:
    make(tmp_path, "real.md", "folder/n.md", text="hello\n")
    (tmp_path / "alias.md").symlink_to(tmp_path / "real.md")
    (tmp_path / "folderlink").symlink_to(tmp_path / "folder", target_is_directory=True)
    (tmp_path / "dangling.md").symlink_to(tmp_path / "nowhere.md")
    config = whole_vault(tmp_path)
    result = scan_vault(config)
    # File links inside the vault are followed; folder links never are (no loops, no copies).
    assert [fp.path for fp in result.notes] == ["alias.md", "folder/n.md", "real.md"]
    assert result.notes[0].size == len("hello\n")
    assert [(p.path, p.code) for p in result.problems] == [
        ("dangling.md", "symlink_refused"),
        ("folderlink", "symlink_refused"),
    ]
    assert read_note(config, "alias.md") == b"hello\n"


# -- scan_paths and eligibility -----------------------------------------------------------------


def test_is_eligible_note(tmp_path: Path) -> None:
    config = Config(
        root=tmp_path.resolve(),
        managed_folder="Notes/mem",
        mappings=(FolderMapping("Notes", "project", "n"),),
        exclude=("Notes/Templates/**",),
    )
    assert is_eligible_note(config, "Notes/a.md")
    assert is_eligible_note(config, "Notes/mem/global/k.md")
    assert not is_eligible_note(config, "Notes/a.png")
    assert not is_eligible_note(config, "Other/a.md")
    assert not is_eligible_note(config, "Notes/.obsidian/a.md")
    assert not is_eligible_note(config, "Notes/a.sync-conflict-20261120-101500-X.md")
    assert not is_eligible_note(config, "Notes/Templates/t.md")
    assert not is_eligible_note(config, "Notes/../x.md")


def test_scan_paths(tmp_path: Path) -> None:
    make(tmp_path, "a.md", "b.md", "pic.png")
    (tmp_path / "dir.md").mkdir()
    config = whole_vault(tmp_path)
    found, gone = scan_paths(config, ["a.md", "missing.md", "pic.png", "dir.md", "a.md"])
    st = (tmp_path / "a.md").stat()
    assert found == [Fingerprint("a.md", st.st_size, st.st_mtime_ns)]
    assert gone == ["missing.md", "pic.png", "dir.md"]


def test_scan_paths_agrees_with_the_walk_on_links(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    vault = tmp_path / "vault"
    make(outside, "o.md")
    make(vault, "folder/n.md", "t.md")
    (vault / "in.md").symlink_to(vault / "t.md")
    (vault / "out.md").symlink_to(outside / "o.md")
    (vault / "link").symlink_to(vault / "folder", target_is_directory=True)
    config = whole_vault(vault)
    found, gone = scan_paths(config, ["in.md", "out.md", "link/n.md", "folder/n.md"])
    assert [fp.path for fp in found] == ["in.md", "folder/n.md"]
    assert gone == ["out.md", "link/n.md"]


# -- reading ------------------------------------------------------------------------------------


def test_read_note_and_hash(tmp_path: Path) -> None:
    make(tmp_path, "a.md", text="# A\nbody\n")
    data = read_note(whole_vault(tmp_path), "a.md")
    assert data == b"# A\nbody\n"
    assert content_hash(b"# A\nbody\n") == content_hash(b"# A\nbody\n")
    assert len(content_hash(b"")) == 32
    assert content_hash(b"a") != content_hash(b"b")


def test_read_note_caps_at_one_byte_over_the_limit(tmp_path: Path) -> None:
    make(tmp_path, "big.md", text="x" * 100)
    data = read_note(whole_vault(tmp_path, max_note_bytes=10), "big.md")
    assert data == b"x" * 11  # the parser sees it is over the limit and flags file_too_large


def test_read_note_vanished(tmp_path: Path) -> None:
    result = read_note(whole_vault(tmp_path), "gone.md")
    assert isinstance(result, Problem)
    assert result.code == "file_vanished"


@pytest.mark.unprivileged
def test_read_note_unreadable(tmp_path: Path) -> None:
    make(tmp_path, "locked.md")
    (tmp_path / "locked.md").chmod(0)
    result = read_note(whole_vault(tmp_path), "locked.md")
    assert isinstance(result, Problem) and result.code == "file_unreadable"


def test_read_note_unreadable_directory(tmp_path: Path) -> None:
    (tmp_path / "dir.md").mkdir()
    result = read_note(whole_vault(tmp_path), "dir.md")
    assert isinstance(result, Problem) and result.code == "file_unreadable"


def test_read_note_detects_a_concurrent_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make(tmp_path, "busy.md", text="first draft\n")
    path = tmp_path / "busy.md"
    real_read = scan._read_limited

    def read_then_append(handle: BinaryIO, limit: int) -> bytes:
        data = real_read(handle, limit)
        # Another program appends between our read and our second fstat.
        with path.open("a", encoding="utf-8") as other:
            other.write("more text\n")
        return data

    monkeypatch.setattr(scan, "_read_limited", read_then_append)
    result = read_note(whole_vault(tmp_path), "busy.md")
    assert isinstance(result, Problem)
    assert result.code == "file_unstable"
    assert result.severity == "warning"


def test_read_note_detects_truncation_during_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make(tmp_path, "busy.md", text="0123456789")

    def short_read(handle: BinaryIO, limit: int) -> bytes:
        return handle.read(4)  # as if the file shrank mid-read and grew back

    monkeypatch.setattr(scan, "_read_limited", short_read)
    result = read_note(whole_vault(tmp_path), "busy.md")
    assert isinstance(result, Problem) and result.code == "file_unstable"


# -- the example vault and speed ----------------------------------------------------------------


def test_example_vault(example_vault: Path) -> None:
    config = load_config(example_vault)
    result = scan_vault(config)
    paths = [fp.path for fp in result.notes]
    assert len(paths) == 30
    # The Syncthing copy is left out, and reported for someone to merge.
    copy = "Knowledge/Git workflow.sync-conflict-20261120-101500-ABCDEFG.md"
    assert [(p.path, p.code) for p in result.problems] == [(copy, "conflict_copy")]
    assert "Knowledge/Git workflow.md" in result.problems[0].message
    assert "agent-memory/project/atlas/build-and-test-commands.md" in paths
    assert "Projects/Templates/Meeting template.md" not in result.files  # config glob
    # userIgnoreFilters: still a link target (in files), not indexed as a note (issue 18 point 1)
    assert "Knowledge/Archive/Old build system.md" in result.files
    assert "Knowledge/Archive/Old build system.md" not in paths
    assert "README.md" not in result.files  # anchored glob
    assert not any("sync-conflict" in f for f in result.files)  # dropping
    assert "Meeting notes.md" in result.files  # unmapped, yet a link target
    assert "Meeting notes.md" not in paths
    assert "attachments/atlas-architecture.png" in result.files
    for path in paths:
        data = read_note(config, path)
        assert isinstance(data, bytes) and data.startswith((b"---\n", b"# "))


def test_scan_of_ten_thousand_files(tmp_path: Path) -> None:
    for d in range(100):
        folder = tmp_path / f"d{d:03}"
        folder.mkdir()
        for i in range(100):
            (folder / (f"n{i}.md" if i % 10 else f"a{i}.png")).write_bytes(b"x")
    config = whole_vault(tmp_path)
    result = scan_vault(config)
    assert len(result.files) == 10_000
    assert len(result.notes) == 9_000


def test_read_note_permission_error_without_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make(tmp_path, "locked.md")

    def deny(*args: object, **kwargs: object) -> int:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(scan.os, "open", deny)
    result = read_note(whole_vault(tmp_path), "locked.md")
    assert isinstance(result, Problem) and result.code == "file_unreadable"


def test_a_batch_read_resolving_each_folder_once_answers_as_the_plain_read(
    tmp_path: Path,
) -> None:
    """Workers read a chunk with a cache of folders' real paths: every case the plain read
    tells apart (links in and out of the vault, through a folder link, dangling, gone, a
    folder named like a note) gets the same answer, and each folder is resolved once."""
    vault, outside = tmp_path / "vault", tmp_path / "outside"
    make(outside, "o.md", "dir/x.md", text="outside\n")
    make(vault, "t.md", "folder/n.md", "folder/m.md", text="inside\n")
    (vault / "in.md").symlink_to(vault / "t.md")
    (vault / "folder" / "up.md").symlink_to(vault / "t.md")
    (vault / "out.md").symlink_to(outside / "o.md")
    (vault / "dangling.md").symlink_to(vault / "nowhere.md")
    (vault / "link").symlink_to(vault / "folder", target_is_directory=True)
    (vault / "leak").symlink_to(outside / "dir", target_is_directory=True)
    (vault / "dir.md").mkdir()
    config = whole_vault(vault)
    paths = [
        "t.md", "in.md", "out.md", "dangling.md", "gone.md", "dir.md", "folder/n.md",
        "folder/up.md", "link/m.md", "leak/x.md", "folder/m.md",
    ]  # fmt: skip
    folders: dict[str, str | None] = {}
    for path in paths:
        plain = scan.read_note_fingerprinted(config, path)
        cached = scan.read_note_fingerprinted(config, path, folders)
        if isinstance(plain, Problem):
            assert cached == plain, path
        else:
            assert isinstance(cached, tuple) and cached[0] == plain[0], path
            assert cached[1] == plain[1], path
    assert isinstance(scan.read_note_fingerprinted(config, "leak/x.md", folders), Problem)
    assert folders[str(vault / "leak")] is None  # outside: refused, never opened
    assert folders[str(vault / "link")] == str(vault / "folder")
    assert len(folders) == 4  # the root, folder, link, leak: each resolved once
