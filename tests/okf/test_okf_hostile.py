"""Hostile OKF bundles: every unsafe member is rejected with a reason, nothing escapes."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import shutil
import stat
import tarfile
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.helpers import published, state_of
from vaultmem.core.config import init_vault, load_config
from vaultmem.core.errors import FileAccessError, InvalidArgumentError, PathEscapeError
from vaultmem.note.topics import read_topic
from vaultmem.okf.bundle import Limits
from vaultmem.okf.export import export_bundle
from vaultmem.okf.ingest import import_bundle
from vaultmem.okf.validate import validate_bundle

GOOD = b"---\ntype: Note\ntitle: Good\n---\nFine.\n"
BOMB_YAML = (
    "---\ntype: Note\n"
    'a: &a ["x","x","x","x","x","x","x","x","x","x"]\n'
    + "".join(
        f"{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n"
        for p, c in zip("abcdefg", "bcdefgh", strict=True)
    )
    + "---\nboom\n"
).encode()
FORGED = (
    b"---\ntype: Note\ngenerated: {by: x/1, at: 2999-01-01T00:00:00Z}\n---\n"
    b"<!-- id: 00000000-0000-0000-0000-000000000000 | scope: global -->\n"
    b"## 2020-01-01T00:00:00Z\nforged observation\n\n## See Also\n- [[elsewhere]]\n"
)


def _hashes(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file() and ".vaultmem" not in p.relative_to(root).parts
    }


def _tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _file(name: str, data: bytes) -> tuple[tarfile.TarInfo, bytes]:
    return tarfile.TarInfo(name), data


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    init_vault(root)
    (root / "Human note.md").write_text("# mine\n")
    return root


def test_hostile_tar_members_are_rejected_and_nothing_escapes(vault: Path, tmp_path: Path) -> None:
    link = tarfile.TarInfo("link.md")
    link.type = tarfile.SYMTYPE
    link.linkname = "/etc/passwd"
    hard = tarfile.TarInfo("hard.md")
    hard.type = tarfile.LNKTYPE
    hard.linkname = "good.md"
    bundle = _tar(
        tmp_path / "evil.tar.gz",
        [
            _file("good.md", GOOD),
            (link, None),
            (hard, None),
            _file("/abs/olute.md", GOOD),
            _file("../escape.md", GOOD),
            _file("a/../../escape2.md", GOOD),
            _file("big.md", b"---\ntype: Note\n---\n" + b"x" * 2000),
            _file("Case.md", GOOD),
            _file("case.md", GOOD),
            _file("latin1.md", "---\ntype: Note\n---\ncaf\xe9\n".encode("latin-1")),
            _file("bomb.md", BOMB_YAML),
            _file("aux.md", GOOD),
            _file("forged.md", FORGED),
            _file("notype.md", b"---\ntitle: x\n---\n"),
        ],
    )
    config = load_config(vault)
    before = _hashes(vault)
    now = datetime(2026, 12, 1, tzinfo=UTC)
    report = published(
        config,
        import_bundle(
            config,
            bundle,
            scope="project",
            scope_id="p",
            now=now,
            limits=Limits(max_file_bytes=1000),
        ),
    )
    reasons = {r["path"]: r["reason"] for r in report.rejected}
    assert "symbolic" in reasons["link.md"] and "hard" in reasons["hard.md"]
    assert reasons["/abs/olute.md"] == "absolute path"
    assert "'..'" in reasons["../escape.md"] and "'..'" in reasons["a/../../escape2.md"]
    assert "larger than" in reasons["big.md"]
    assert "case" in reasons["Case.md"] and "case" in reasons["case.md"]
    assert "UTF-8" in reasons["latin1.md"]
    assert "expand" in reasons["bomb.md"]
    assert "portable" in reasons["aux.md"]
    assert "type" in reasons["notype.md"]
    assert report.imported == 2  # good and forged (escaped)
    assert report.timestamps_clamped == 1
    assert report.markers_escaped >= 3
    after = _hashes(vault)
    changed = {p for p in set(before) | set(after) if before.get(p) != after.get(p)}
    assert changed and all(p.startswith("agent-memory/project/p/") for p in changed)
    assert not (tmp_path / "escape.md").exists() and not (vault.parent / "escape2.md").exists()
    forged = (vault / "agent-memory" / "project" / "p" / "forged.md").read_text()
    assert "\n\\## 2020-01-01T00:00:00Z\n" in forged
    assert "\n\\<!-- id:" in forged and "\n\\## See Also\n" in forged
    topic = read_topic("forged.md", forged)
    assert topic.id != "00000000-0000-0000-0000-000000000000" and len(topic.observations) == 1
    assert topic.observations[0].text.startswith(FORGED.decode().split("---\n")[2].strip("\n"))
    assert "2999-01-01T00:00:00Z" in forged  # the original kept in the body
    assert "updated: '2026-12-01T00:00:00Z'" in forged  # clamped to now


def test_zip_bombs_and_escapes(vault: Path, tmp_path: Path) -> None:
    path = tmp_path / "evil.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("ok.md", GOOD)
        archive.writestr("zeros.md", b"---\ntype: Note\n---\n" + b"0" * 900_000)
        archive.writestr("../up.md", GOOD)
        archive.writestr("C:/win.md", GOOD)
        info = zipfile.ZipInfo("sym.md")
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(info, "/etc/passwd")
    before = _hashes(vault)
    report = published(load_config(vault), import_bundle(load_config(vault), path, scope="global"))
    reasons = {r["path"]: r["reason"] for r in report.rejected}
    assert "ratio" in reasons["zeros.md"]
    assert "'..'" in reasons["../up.md"] and reasons["C:/win.md"] == "absolute path"
    assert "symbolic" in reasons["sym.md"]
    assert report.imported == 1
    changed = {p for p, h in _hashes(vault).items() if before.get(p) != h}
    assert changed == {"agent-memory/global/ok.md"}


def test_archives_expanding_past_the_budget_are_refused_whole(vault: Path, tmp_path: Path) -> None:
    members = [_file(f"f{i}.md", b"---\ntype: Note\n---\n" + b"y" * 900) for i in range(50)]
    bundle = _tar(tmp_path / "many.tar.gz", members)
    with pytest.raises(InvalidArgumentError, match="expands past"):
        published(
            load_config(vault),
            import_bundle(
                load_config(vault), bundle, scope="global", limits=Limits(max_total_bytes=10_000)
            ),
        )
    path = tmp_path / "declared.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for i in range(20):
            archive.writestr(f"z{i}.md", b"---\ntype: Note\n---\n" + b"q" * 900)
    with pytest.raises(InvalidArgumentError, match="declares"):
        published(
            load_config(vault),
            import_bundle(
                load_config(vault), path, scope="global", limits=Limits(max_total_bytes=5000)
            ),
        )


def test_folder_bundle_symlinks_are_refused(vault: Path, tmp_path: Path) -> None:
    bundle = tmp_path / "bundle"
    (bundle / "sub").mkdir(parents=True)
    (bundle / "ok.md").write_bytes(GOOD)
    secret = tmp_path / "secret.md"
    secret.write_bytes(GOOD)
    os.symlink(secret, bundle / "linked.md")
    os.symlink(tmp_path, bundle / "sub" / "loop")
    report = published(
        load_config(vault), import_bundle(load_config(vault), bundle, scope="global")
    )
    reasons = {r["path"]: r["reason"] for r in report.rejected}
    assert reasons == {"linked.md": "symbolic link", "sub/loop": "symbolic link"}
    assert report.imported == 1


def test_import_needs_a_valid_target_scope(vault: Path, tmp_path: Path) -> None:
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / "x.md").write_bytes(GOOD)
    from vaultmem.core.errors import PathEscapeError

    for scope, scope_id in (
        ("project", None),
        ("project", "../up"),
        ("global", "x"),
        ("nope", None),
    ):
        with pytest.raises(PathEscapeError):
            published(
                load_config(vault),
                import_bundle(load_config(vault), bundle, scope=scope, scope_id=scope_id),
            )


# --- issue 16 / 15.5: export never writes through a link or over a person's files ----------------


def _tree_hashes(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file() and not p.is_symlink()
    }


def test_export_refuses_a_link_inside_the_bundle_folder(
    example_vault: Path, tmp_path: Path
) -> None:
    config = load_config(example_vault)
    out = tmp_path / "out"
    export_bundle(config, out)
    assert (out / "project").is_dir()
    shutil.rmtree(out / "project")
    (out / "project").symlink_to(example_vault / "Knowledge", target_is_directory=True)
    before = _tree_hashes(example_vault)
    with pytest.raises(PathEscapeError, match="symbolic link"):
        export_bundle(config, out)
    assert _tree_hashes(example_vault) == before


def test_prune_never_deletes_a_persons_files_behind_a_link_or_an_edit(
    example_vault: Path, tmp_path: Path
) -> None:
    config = load_config(example_vault)
    out = tmp_path / "out"
    export_bundle(config, out, folder="Projects/Atlas")
    # A person edits one exported file; its source note then goes away.
    edited = out / "Meeting notes.md"
    edited.write_text(edited.read_text() + "\nmy own addition\n")
    (example_vault / "Projects/Atlas/Meeting notes.md").unlink()
    report = export_bundle(config, out, folder="Projects/Atlas", prune=True)
    assert report.pruned == () and edited.exists()
    # Elsewhere a person's folder with an index.md is linked in where a bundle folder was.
    elsewhere = tmp_path / "persons"
    elsewhere.mkdir()
    (elsewhere / "index.md").write_text("mine\n")
    (out / "linked").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(PathEscapeError):
        export_bundle(config, out, folder="Projects/Atlas", prune=True)
    assert (elsewhere / "index.md").read_text() == "mine\n"


def test_export_refuses_a_non_empty_folder_it_did_not_write(
    example_vault: Path, tmp_path: Path
) -> None:
    config = load_config(example_vault)
    out = tmp_path / "notes"
    out.mkdir()
    (out / "index.md").write_text("a person's index\n")
    with pytest.raises(InvalidArgumentError, match="not empty"):
        export_bundle(config, out, folder="Projects/Atlas")
    assert (out / "index.md").read_text() == "a person's index\n"
    assert (
        not (state_of(example_vault) / "exports.json").exists()
        or str(out) not in (state_of(example_vault) / "exports.json").read_text()
    )


def test_export_to_an_unwritable_place_is_a_clear_error(
    example_vault: Path, tmp_path: Path
) -> None:
    config = load_config(example_vault)
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    for out in (Path("/proc/vaultmem-nowhere/bundle"), blocker / "bundle"):
        with pytest.raises(FileAccessError) as caught:
            export_bundle(config, out, folder="Projects/Atlas")
        assert caught.value.code == "io_error" and "bundle" in caught.value.message


def test_a_folder_that_is_not_a_bundle_fails_import_and_validate(
    vault: Path, tmp_path: Path
) -> None:
    config = load_config(vault)
    empty = tmp_path / "empty"
    empty.mkdir()
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "readme.md").write_text("# just notes\n")
    for folder in (empty, plain):
        with pytest.raises(InvalidArgumentError, match="not an OKF bundle"):
            published(config, import_bundle(config, folder, scope="project", scope_id="p"))
        assert validate_bundle(folder).ok is False
    (empty / "x.txt").write_text("x")
    assert any("not an OKF bundle" in f.message for f in validate_bundle(empty).findings)


def test_a_non_utf8_member_name_rejects_only_that_member(vault: Path, tmp_path: Path) -> None:
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / "good.md").write_bytes(GOOD)
    with open(os.path.join(os.fsencode(bundle), b"bad\xff.md"), "wb") as handle:
        handle.write(GOOD)
    report = published(
        load_config(vault), import_bundle(load_config(vault), bundle, scope="project", scope_id="p")
    )
    assert report.imported == 1
    assert report.rejected == ({"path": "bad\\xff.md", "reason": "name is not valid UTF-8"},)


@pytest.mark.timeout(30)
def test_import_bounds_the_work_per_concept(vault: Path, tmp_path: Path) -> None:
    """A 16 KB concept whose YAML aliases expand to 20 MB ran 96 s even with --dry-run."""
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / "index.md").write_text('---\nokf_version: "0.2"\n---\n# Bundle\n')
    fm = "a: &a " + "x" * 1000 + "\nb: [" + ",".join(["*a"] * 2000) + "]\n"  # 7 KB -> 2 MB
    (bundle / "bomb.md").write_text("---\ntype: Note\n" + fm + "---\nbody\n")
    (bundle / "big.md").write_text("---\ntype: Note\n---\n" + "word " * 2500)
    (bundle / "good.md").write_bytes(GOOD)
    config = dataclasses.replace(load_config(vault), max_note_bytes=10_000)
    for dry_run in (True, False):
        report = published(
            config, import_bundle(config, bundle, scope="project", scope_id="p", dry_run=dry_run)
        )
        reasons = {r["path"]: r["reason"] for r in report.rejected}
        # Refused by the YAML loader's expansion budget or by import's own frontmatter bound.
        assert "expand" in reasons["bomb.md"]
        assert "max_note_bytes" in reasons["big.md"]
        assert report.imported == 1


def test_a_colon_in_a_name_is_named_as_the_reason() -> None:
    from vaultmem.okf.bundle import name_problem

    assert name_problem("C:/x.md") == "absolute path"
    reason = name_problem("a:b.md")
    assert reason is not None and "absolute" not in reason and ":" in reason


@pytest.mark.slow
def test_an_imported_concept_reads_back_as_it_was(vault: Path, tmp_path: Path) -> None:
    """Concepts starting with `# Title`, or holding supersede lines and see-also markers, read
    back whole; a later relate rewrites only its own block."""
    from vaultmem.memory import relations
    from vaultmem.memory import topic_store as memory

    body = (
        "# Title\n\nIntro.\n\n## Steps\n1. x\n> Superseded by 2026-01-01T00:00:00Z\n"
        "<!-- vaultmem:see-also -->\n- [[kept]]\n<!-- /vaultmem:see-also -->"
    )
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / "index.md").write_text('---\nokf_version: "0.2"\n---\n# Bundle\n')
    (bundle / "titled.md").write_text("---\ntype: Note\n---\n" + body + "\n")
    (bundle / "other.md").write_bytes(GOOD)
    config = load_config(vault)
    published(config, import_bundle(config, bundle, scope="project", scope_id="p"))
    published(config, relations.relate(config, "titled", "other"))
    got = memory.get(config, "titled").topic.observations
    assert [(o.text, o.superseded_by) for o in got] == [(body, None)]
