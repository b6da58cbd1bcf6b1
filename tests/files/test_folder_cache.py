"""The walk's folder record (`files/folder_cache.py`): a folder that did not change since the
last walk is not listed again, and every way a folder's names can change shows anyway.

Each test walks a real vault twice: once to record, once after a change, and compares the
second walk with a walk that takes no record (the truth). `now_ns` is passed an hour ahead
so that folders made by the test count as settled (a real walk waits 2 s, `SETTLE_NS`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from vaultmem.core.config import Config, FolderMapping
from vaultmem.files import folder_cache
from vaultmem.files.scan import ScanResult, scan_vault
from vaultmem.index.survey import walk

LATER = 3600 * 10**9


def _config(root: Path, **kwargs: object) -> Config:
    return Config(
        root=root.resolve(),
        mappings=(FolderMapping("Notes", "project", "v"), FolderMapping("Daily", "global", None)),
        **kwargs,  # type: ignore[arg-type]
    )


def _vault(root: Path) -> Config:
    for rel in ("Notes/a.md", "Notes/b.md", "Notes/deep/c.md", "Daily/2026-12-01.md", "x.png"):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {rel}\n", encoding="utf-8")
    config = _config(root)
    config.state_dir.mkdir(parents=True, exist_ok=True)
    return config


def _walk(config: Config, now_ns: int | None = None) -> ScanResult:
    """A walk through the record, which it then saves, as reconcile's walk does."""
    cache = folder_cache.load(config, time.time_ns() + LATER if now_ns is None else now_ns)
    result = scan_vault(config, cache)
    folder_cache.save(config, cache)
    return result


def _forge(config: Config, folder: str, edit: Callable[[list[str]], None]) -> None:
    """Change the recorded note names of `folder` behind the walk's back (`edit` gets the list).
    The record keeps them as flags over the folder's files (a name dropped from the notes is
    dropped from the files too)."""
    path = config.state_dir / folder_cache.RECORD_NAME
    data = json.loads(path.read_bytes())
    entry = data["folders"][folder]
    files, flags = entry[1], entry[2]
    notes = [name for name, flag in zip(files, flags, strict=True) if flag == "1"]
    others = [name for name, flag in zip(files, flags, strict=True) if flag == "0"]
    edit(notes)
    entry[1] = sorted({*others, *notes})
    entry[2] = "".join("1" if name in notes else "0" for name in entry[1])
    path.write_text(json.dumps(data), encoding="utf-8")


def _record(config: Config) -> dict[str, object]:
    """The recorded folders; none when no record was written."""
    path = config.state_dir / folder_cache.RECORD_NAME
    if not path.exists():
        return {}
    data = json.loads(path.read_bytes())
    folders: dict[str, object] = data["folders"]
    return folders


def test_a_recorded_folder_is_not_listed_again(tmp_path: Path) -> None:
    config = _vault(tmp_path / "v")
    first = _walk(config)
    assert first == scan_vault(config)
    assert set(_record(config)) == {"", "Notes/", "Notes/deep/", "Daily/"}
    # The record stands for the folder: a name dropped from it is not seen while the
    # folder's own stat is unchanged (the record is what the walk used, not a listing).
    _forge(config, "Notes/", lambda names: names.remove("b.md"))
    second = _walk(config)
    assert "Notes/b.md" not in [n.path for n in second.notes]
    assert "Notes/a.md" in [n.path for n in second.notes]


def test_an_edit_in_place_is_seen_through_the_record(tmp_path: Path) -> None:
    config = _vault(tmp_path / "v")
    _walk(config)
    note = config.root / "Notes/a.md"
    note.write_text("# a\n\nmore text than before\n", encoding="utf-8")
    os.utime(note, ns=(10**18, 10**18))
    second = _walk(config)
    assert second == scan_vault(config)
    assert ("Notes/a.md", note.stat().st_size, 10**18) in second.notes


@pytest.mark.parametrize("change", ["add", "remove", "rename", "into a new folder", "a dropping"])
def test_every_change_of_names_is_seen(tmp_path: Path, change: str) -> None:
    config = _vault(tmp_path / "v")
    _walk(config)
    notes = config.root / "Notes"
    if change == "add":
        (notes / "new.md").write_text("# new\n", encoding="utf-8")
    elif change == "remove":
        (notes / "b.md").unlink()
    elif change == "rename":
        (notes / "b.md").rename(notes / "renamed.md")
    elif change == "into a new folder":
        (notes / "deeper").mkdir()
        (notes / "b.md").rename(notes / "deeper" / "b.md")
    else:
        (notes / "b.md").rename(notes / "b.md~")
    assert _walk(config) == scan_vault(config)


def test_a_folder_time_set_back_does_not_hide_a_new_note(tmp_path: Path) -> None:
    """rsync and unpackers set a folder's mtime back after filling it: its ctime still moves."""
    config = _vault(tmp_path / "v")
    notes = config.root / "Notes"
    before = notes.stat()
    _walk(config)
    (notes / "synced.md").write_text("# synced\n", encoding="utf-8")
    os.utime(notes, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert notes.stat().st_mtime_ns == before.st_mtime_ns
    second = _walk(config)
    assert "Notes/synced.md" in [n.path for n in second.notes]


def test_a_folder_changed_just_now_is_not_recorded(tmp_path: Path) -> None:
    config = _vault(tmp_path / "v")
    _walk(config, now_ns=time.time_ns())  # every folder was made a moment ago
    assert _record(config) == {}
    _walk(config)
    assert set(_record(config)) == {"", "Notes/", "Notes/deep/", "Daily/"}


def test_another_configuration_takes_no_record(tmp_path: Path) -> None:
    config = _vault(tmp_path / "v")
    _walk(config)
    _forge(config, "Notes/", lambda names: names.remove("b.md"))  # would hide b.md if taken
    excluding = _config(config.root, exclude=("deep",))
    walked = _walk(excluding)
    assert walked == scan_vault(excluding)
    assert "Notes/b.md" in [n.path for n in walked.notes]
    assert "Notes/deep/c.md" not in [n.path for n in walked.notes]


def test_a_name_holding_a_secret_keeps_its_folder_out_of_the_record(tmp_path: Path) -> None:
    config = _vault(tmp_path / "v")
    token = "xoxb-" + "1234567890-abcdefghijklmnop"
    (config.root / "Notes" / f"{token}.md").write_text("# t\n", encoding="utf-8")
    first = _walk(config)
    assert first == scan_vault(config)
    assert "Notes/" not in _record(config)
    assert token not in (config.state_dir / folder_cache.RECORD_NAME).read_text("utf-8")
    assert [p.code for p in _walk(config).problems] == ["secret_in_name"]


def test_a_folder_with_a_link_is_listed_every_time(tmp_path: Path) -> None:
    config = _vault(tmp_path / "v")
    target = config.root / "Notes" / "a.md"
    (config.root / "Daily" / "link.md").symlink_to(target)
    _walk(config)
    assert "Daily/" not in _record(config)
    target.write_text("# a, longer now\n", encoding="utf-8")  # the link's target changes
    second = _walk(config)
    assert second == scan_vault(config)


def test_a_walk_that_finds_the_record_standing_writes_nothing(tmp_path: Path) -> None:
    """A no-op walk leaves the record alone, even with a folder it must list every time (one
    holding a link): rewriting 100,000 names on every no-op would cost more than it saves."""
    config = _vault(tmp_path / "v")
    (config.root / "Daily" / "link.md").symlink_to(config.root / "Notes" / "a.md")
    _walk(config)
    record = (config.state_dir / folder_cache.RECORD_NAME).stat()
    _walk(config)
    again = (config.state_dir / folder_cache.RECORD_NAME).stat()
    assert (again.st_ino, again.st_mtime_ns) == (record.st_ino, record.st_mtime_ns)
    (config.root / "Notes" / "new.md").write_text("# new\n", encoding="utf-8")
    _walk(config)  # a folder that changed: the record is written again
    assert (config.state_dir / folder_cache.RECORD_NAME).stat().st_ino != record.st_ino


@pytest.mark.parametrize("damage", [b"", b"{", b'{"format": 1}', b"[1, 2]", b"\xff\xfe"])
def test_a_damaged_record_is_a_walk_without_it(tmp_path: Path, damage: bytes) -> None:
    config = _vault(tmp_path / "v")
    (config.state_dir / folder_cache.RECORD_NAME).write_bytes(damage)
    assert _walk(config) == scan_vault(config)
    assert set(_record(config)) == {"", "Notes/", "Notes/deep/", "Daily/"}


def test_a_vanished_note_makes_its_folder_listed_again(tmp_path: Path) -> None:
    config = _vault(tmp_path / "v")
    _walk(config)
    _forge(config, "Notes/", lambda names: names.append("ghost.md"))  # a name it does not hold
    assert _walk(config) == scan_vault(config)
    assert "ghost.md" not in json.dumps(_record(config))


def test_rebuild_lists_every_folder(tmp_path: Path) -> None:
    config = _vault(tmp_path / "v")
    _walk(config)
    _forge(config, "Notes/", lambda names: names.remove("b.md"))
    assert "Notes/b.md" in [n.path for n in walk(config, rebuild=True).notes]


def test_a_walk_through_the_record_digests_as_one_that_lists_every_folder(tmp_path: Path) -> None:
    """The digest a no-op compares (`storage.last_survey`) is the folders' columns in the
    walk's order (`files.walked`): a folder listed again, because it changed in the two
    seconds before the last walk, must digest as its recorded listing does."""
    config = _vault(tmp_path / "v")
    listed = walk(config, rebuild=True).digest
    _walk(config)  # the record is written
    assert set(_record(config)) == {"", "Notes/", "Notes/deep/", "Daily/"}
    assert walk(config, rebuild=False).digest == listed
    note = config.root / "Notes/deep/c.md"
    os.utime(note, ns=(10**18, 10**18))  # an edit in place: the same names, another mtime
    assert walk(config, rebuild=False).digest != listed
    assert walk(config, rebuild=False).digest == walk(config, rebuild=True).digest


def test_the_record_keeps_each_name_once(tmp_path: Path) -> None:
    """A folder's note names are flags over its files (`_note_flags`): flags that do not fit
    the files are a damaged record, and a listing whose notes are not among its files (none a
    walk makes) is left out of the record rather than recorded wrong."""
    config = _vault(tmp_path / "v")
    _walk(config)
    entry = _record(config)["Notes/"]
    assert entry[1:3] == [["a.md", "b.md"], "11"]  # type: ignore[index]
    path = config.state_dir / folder_cache.RECORD_NAME
    data = json.loads(path.read_bytes())
    data["folders"]["Notes/"][2] = "1"  # one flag for two files
    path.write_text(json.dumps(data), encoding="utf-8")
    assert _walk(config) == scan_vault(config)
    cache = folder_cache.load(config, time.time_ns() + LATER)
    assert set(cache.kept) == {"", "Notes/", "Notes/deep/", "Daily/"}
    key, listing = cache.kept["Notes/"]
    cache.found = {"Notes/": (key, listing._replace(notes=("a.md", "ghost.md")))}
    cache.changed = True
    folder_cache.save(config, cache)
    assert _record(config) == {}
