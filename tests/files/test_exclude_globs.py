"""The `exclude` globs' semantics (docs/configuration.md, "Exclusion syntax"), pinned on a real
walk: each case is a glob and the files it must and must not hide.

The matcher is our own (`files/scan.py`), not gitignore's (pathspec) nor wcmatch's GLOBSTAR:
docs/architecture.md ("Exclusion globs") lists where those differ; the cases marked `differs`
are those, so a swap to either library fails here rather than hiding other files (or fewer)
in users' vaults.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from vaultmem.core.config import Config, FolderMapping
from vaultmem.files.scan import scan_vault

CASES = [
    # (glob, hidden, kept)
    ("*.excalidraw.md", ["a.excalidraw.md", "d/b.excalidraw.md"], ["a.md", "excalidraw.md"]),
    ("?.md", ["a.md", "d/b.md"], ["ab.md"]),
    ("[ab].md", ["a.md", "b.md"], ["c.md"]),
    ("[!ab].md", ["c.md"], ["a.md", "b.md"]),
    ("Templates", ["Templates/t.md", "x/Templates/u.md", "Templates"], ["Templatesque.md"]),
    ("drafts/*", ["drafts/one.md", "drafts/deep/two.md"], ["x/drafts/one.md"]),
    ("Projects/Templates/**", ["Projects/Templates/a/b.md"], ["Templates.md", "Projects/c.md"]),
    ("**/z.md", ["z.md", "a/b/z.md"], ["a/zz.md"]),
    ("a/**/b.md", ["a/b.md", "a/x/y/b.md"], ["b.md", "c/a/b.md"]),
    ("/README.md", ["README.md"], ["a/README.md"]),
    ("Archive/", ["Archive/old.md", "x/Archive/o.md", "Archive"], ["Archived.md"]),
    ("notes/Draft.md", ["notes/Draft.md"], ["notes/draft.md"]),  # case-sensitive
    # differs: `**` inside a name still crosses folders (gitignore, wcmatch: one name only)
    ("Projects/**.md", ["Projects/a.md", "Projects/x/y/b.md"], ["Other/a.md"]),
    ("a/b**c.md", ["a/bc.md", "a/bX/Yc.md"], ["a/c.md"]),
    # differs: `!` and `#` are literal (gitignore: a negation, a comment; wcmatch agrees)
    ("!keep.md", ["!keep.md"], ["keep.md"]),
    ("#tag.md", ["#tag.md"], ["tag.md"]),
    # differs: a backslash is a literal character (gitignore, wcmatch: an escape; a swap
    # could double it first)
    ("a\\*.md", ["a\\x.md"], ["a*.md", "ax.md"]),
    # differs: an unclosed `[` is literal (gitignore: the entry is dropped; wcmatch agrees)
    ("x[.md", ["x[.md"], ["x.md"]),
    # differs: a trailing `/` is ignored, so it hides a file too (gitignore, wcmatch: folders
    # only; a swap could strip it first)
    ("plan.md/", ["plan.md"], ["plans.md"]),
]


def _vault(root: Path, paths: list[str], glob: str) -> Config:
    for path in paths:
        target = root / path
        if path in ("Templates", "Archive"):  # a folder named by the glob, with a note in it
            target = target / "in.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("# note\n", encoding="utf-8")
    return Config(
        root=root.resolve(), mappings=(FolderMapping("", "project", "v"),), exclude=(glob,)
    )


@pytest.mark.parametrize(("glob", "hidden", "kept"), CASES, ids=[c[0] for c in CASES])
def test_an_exclude_glob_hides_exactly_what_the_docs_say(
    tmp_path: Path, glob: str, hidden: list[str], kept: list[str]
) -> None:
    config = _vault(tmp_path, [*hidden, *kept], glob)
    files = set(scan_vault(config).files)
    assert files == set(kept)
