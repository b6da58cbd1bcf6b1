"""Retrieval quality: question sets, the metrics, and a SQLite FTS5 baseline (shared library).

A question set is `benchmarks/questions/<set>.jsonl`, one JSON object per line:
`{"q": "...", "expected": ["note/path.md", ...], "kind": "keyword|paraphrase|synonym|typo|..."}`.
Any expected note in the ranking counts as a hit. Lines starting with `//` are comments. Which
vault a set runs on is in `VAULTS` (paths relative to the repository root, so the same table
works here and in CI, where the shared folder is `../shared`), or, for a vault we may not
redistribute, in `EXTERNAL_VAULTS`: an environment variable names its folder, and a run without
it skips the set (`missing_vault` says how to get it).

Metrics: r@1 and r@5 (share of questions with an expected note in the first 1 / 5 results) and
MRR@10 (mean of 1/rank of the first expected note, 0 beyond rank 10).

The baseline is what a careful person builds in 30 lines with the standard library: SQLite FTS5
with the porter stemmer over whole notes, the file stem as a title column weighted 5×, the
question's non-stop words OR-ed, ranked by `bm25()`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

REPO = Path(__file__).resolve().parent.parent
QUESTIONS_DIR = Path(__file__).resolve().parent / "questions"

VAULTS: dict[str, Path] = {
    "example-vault": REPO / "example-vault",
    "dwarvesf-brain": REPO.parent / "shared" / "vaults" / "dwarvesf-brain",
}
"""Question set name -> vault folder. `../shared` is the shared folder next to the repository
(its worktrees live one level deeper, so the lookup also tries the grandparent)."""


EXTERNAL_VAULTS: dict[str, tuple[str, str]] = {
    "obsidian-help": (
        "VAULTMEM_OBSIDIAN_HELP",
        "the en/ folder of a checkout of https://github.com/obsidianmd/obsidian-help",
    ),
    "obsidian-help-zh": (
        "VAULTMEM_OBSIDIAN_HELP_ZH",
        "the zh/ folder of a checkout of https://github.com/obsidianmd/obsidian-help",
    ),
    "obsidian-help-ja": (
        "VAULTMEM_OBSIDIAN_HELP_JA",
        "the ja/ folder of a checkout of https://github.com/obsidianmd/obsidian-help",
    ),
    "obsidian-help-ko": (
        "VAULTMEM_OBSIDIAN_HELP_KO",
        "the ko/ folder of a checkout of https://github.com/obsidianmd/obsidian-help",
    ),
    "obsidian-help-de": (
        "VAULTMEM_OBSIDIAN_HELP_DE",
        "the de/ folder of a checkout of https://github.com/obsidianmd/obsidian-help",
    ),
    "obsidian-help-ru": (
        "VAULTMEM_OBSIDIAN_HELP_RU",
        "the ru/ folder of a checkout of https://github.com/obsidianmd/obsidian-help",
    ),
    "obsidian-help-uk": (
        "VAULTMEM_OBSIDIAN_HELP_UK",
        "the uk/ folder of a checkout of https://github.com/obsidianmd/obsidian-help",
    ),
    "obsidian-help-el": (
        "VAULTMEM_OBSIDIAN_HELP_EL",
        "the el/ folder of a checkout of https://github.com/obsidianmd/obsidian-help",
    ),
    "obsidian-help-zh-tw": (
        "VAULTMEM_OBSIDIAN_HELP_ZH_TW",
        "the zh-TW/ folder of a checkout of https://github.com/obsidianmd/obsidian-help",
    ),
    "obsidian-help-es": (
        "VAULTMEM_OBSIDIAN_HELP_ES",
        "the es/ folder of a checkout of https://github.com/obsidianmd/obsidian-help",
    ),
    "obsidian-help-fr": (
        "VAULTMEM_OBSIDIAN_HELP_FR",
        "the fr/ folder of a checkout of https://github.com/obsidianmd/obsidian-help",
    ),
    "obsidian-help-it": (
        "VAULTMEM_OBSIDIAN_HELP_IT",
        "the it/ folder of a checkout of https://github.com/obsidianmd/obsidian-help",
    ),
    "obsidian-help-pt-br": (
        "VAULTMEM_OBSIDIAN_HELP_PT_BR",
        "the pt-br/ folder of a checkout of https://github.com/obsidianmd/obsidian-help",
    ),
    "obsidian-help-pl": (
        "VAULTMEM_OBSIDIAN_HELP_PL",
        "the pl/ folder of a checkout of https://github.com/obsidianmd/obsidian-help",
    ),
    "obsidian-help-nl": (
        "VAULTMEM_OBSIDIAN_HELP_NL",
        "the nl/ folder of a checkout of https://github.com/obsidianmd/obsidian-help",
    ),
    "obsidian-help-id": (
        "VAULTMEM_OBSIDIAN_HELP_ID",
        "the id/ folder of a checkout of https://github.com/obsidianmd/obsidian-help",
    ),
    "obsidian-help-ar": (
        "VAULTMEM_OBSIDIAN_HELP_AR",
        "the ar/ folder of a checkout of https://github.com/obsidianmd/obsidian-help",
    ),
    "obsidian-help-fa": (
        "VAULTMEM_OBSIDIAN_HELP_FA",
        "the fa/ folder of a checkout of https://github.com/obsidianmd/obsidian-help",
    ),
    "obsidian-help-th": (
        "VAULTMEM_OBSIDIAN_HELP_TH",
        "the th/ folder of a checkout of https://github.com/obsidianmd/obsidian-help",
    ),
    "obsidian-hub": (
        "VAULTMEM_OBSIDIAN_HUB",
        "the root of a checkout of https://github.com/obsidian-community/obsidian-hub",
    ),
}
"""Question set name -> (environment variable naming its vault folder, what that folder is):
real vaults whose text is not ours to commit. Unset or absent, the set is skipped. A set
runs on the longest name it starts with (`obsidian-help-zh` on its own vault, not the English
one)."""

SPLITS = QUESTIONS_DIR / "splits.json"
"""Each set's fixed tuning and test halves (`questions/make_splits.py`, run once): weights are
chosen on `tune` questions only, and the figures quoted are the `test` halves'."""


def _vault_key(name: str) -> str:
    # `dwarvesf-brain-mismatch` runs on dwarvesf-brain: a set is named for its vault first.
    known = [*VAULTS, *EXTERNAL_VAULTS]
    key = max((k for k in known if name == k or name.startswith(f"{k}-")), key=len, default=None)
    if key is None:
        raise KeyError(f"question set {name!r} names no known vault ({', '.join(known)})")
    return key


def missing_vault(name: str) -> str | None:
    """One line saying how to get the vault of an external set that is not here, else None."""
    key = _vault_key(name)
    if key not in EXTERNAL_VAULTS or vault_for(name).is_dir():
        return None
    variable, what = EXTERNAL_VAULTS[key]
    where = os.environ.get(variable, "").strip()
    state = f"{variable}={where} is not a folder" if where else f"{variable} is not set"
    return f"{name}: skipped ({state}); set {variable} to {what}"


def vault_for(name: str) -> Path:
    """The vault a question set runs on; tries `../shared` and `../../shared` (worktrees). An
    external vault is its environment variable's folder; unset, a path that does not exist, so
    the callers' `exists()` checks skip the set."""
    key = _vault_key(name)
    if key in EXTERNAL_VAULTS:
        variable = EXTERNAL_VAULTS[key][0]
        value = os.environ.get(variable, "").strip()
        return (
            Path(value).expanduser() if value else REPO / "benchmarks" / "out" / f"unset-{variable}"
        )
    path = VAULTS[key]
    if not path.exists() and "shared" in path.parts:
        alt = REPO.parent.parent / path.relative_to(REPO.parent)
        if alt.exists():
            return alt
    return path


def sample_notes(name: str) -> list[str] | None:
    """The notes an external set's questions were written against, or None to read the whole
    vault: `<vault>.sample.tsv` beside the questions (path relative to the vault folder, the
    commit of the version read, its length in characters), so a fresh checkout, which holds
    other notes and newer versions, is cut down to the same collection."""
    listing = QUESTIONS_DIR / f"{_vault_key(name)}.sample.tsv"
    if not listing.exists():
        return None
    lines = listing.read_text(encoding="utf-8").splitlines()
    return [line.split("\t", 1)[0] for line in lines if line and not line.startswith("#")]


def copy_vault(source: Path, target: Path, notes: Sequence[str] | None = None) -> list[str]:
    """Copy the vault `source` to `target` (no index files, no `.git`); with `notes`, only
    those notes (paths relative to `source`). Returns the listed notes `source` lacks."""
    if notes is None:
        shutil.copytree(source, target, ignore=shutil.ignore_patterns("index.duckdb*", ".git"))
        return []
    target.mkdir(parents=True, exist_ok=True)
    missing = []
    for rel in notes:
        if not (source / rel).is_file():
            missing.append(rel)
            continue
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / rel, target / rel)
    return missing


BOILERPLATE_FOOTER = """

%% Hub footer: Please don't edit anything below this line %%

## This note in GitHub

<span class="git-footer">[Edit In GitHub](https://github.dev/dwarvesf/brain/blob/main/{path} \
"git-hub-edit-note") | [Copy this note](https://raw.githubusercontent.com/dwarvesf/brain/main/\
{path} "git-hub-copy-note")</span>

Contribute on GitHub · Edit this page · Join our Discord
[[_index|Home]] · Previous page · Next page
"""
"""What a published vault appends to most notes: obsidian-hub's footer (a heading, a line of
links to the note's own file on GitHub) and a docs site's contribute and navigation lines."""


def add_boilerplate(root: Path) -> None:
    """Append `BOILERPLATE_FOOTER` to 4 notes in 5 (all but every fifth, in path order)."""
    notes = sorted(
        p
        for p in root.rglob("*.md")
        if not any(part.startswith(".") for part in p.relative_to(root).parts)
    )
    for i, path in enumerate(notes):
        if i % 5:
            quoted = quote(path.relative_to(root).as_posix())
            with path.open("a", encoding="utf-8") as out:
                out.write(BOILERPLATE_FOOTER.format(path=quoted))


VARIANTS: dict[str, Callable[[Path], None]] = {"dwarvesf-brain-boilerplate": add_boilerplate}
"""Question sets asked of a changed copy of their vault: the change, applied to the copy."""


@dataclass(frozen=True, slots=True)
class Question:
    q: str
    expected: list[str]
    kind: str


def load_questions(path: str | Path) -> list[Question]:
    """Read a `.jsonl` question set; `//` lines and blank lines are skipped."""
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("//"):
            obj = json.loads(line)
            out.append(Question(obj["q"], list(obj["expected"]), obj.get("kind", "keyword")))
    return out


def split_of(name: str, questions: Sequence[Question]) -> dict[str, list[int]] | None:
    """The set's `tune` and `test` halves (positions in `load_questions` order), or None for
    a set the split does not hold or one edited since (`n` differs): no half is then held out."""
    splits = json.loads(SPLITS.read_text(encoding="utf-8")) if SPLITS.exists() else {}
    entry = splits.get(name)
    if entry is None or entry["n"] != len(questions):
        return None
    return {"tune": list(entry["tune"]), "test": list(entry["test"])}


def question_sets() -> list[str]:
    """Names of the search question sets, sorted. A set with a `<set>.topics.jsonl` beside it
    needs those topics stored first: `benchmarks.bench_recall` runs it, not the search bench;
    a `.jsonl` whose lines hold no `q` (`duplicates.jsonl`, the duplicate check's pairs) is
    another benchmark's."""
    stems = {p.stem for p in QUESTIONS_DIR.glob("*.jsonl")}
    return sorted(
        s
        for s in stems
        if not s.endswith(".topics") and f"{s}.topics" not in stems and _asks(QUESTIONS_DIR / s)
    )


def _asks(stem: Path) -> bool:
    """Whether the `.jsonl` at `stem` is a question set: its first data line has a `q`."""
    for line in stem.with_suffix(".jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("//"):
            return "q" in json.loads(line)
    return False


def metrics(rankings: Sequence[Sequence[str]], questions: Sequence[Question]) -> dict[str, float]:
    """r@1, r@5 and MRR@10 of rankings (note paths, best first), one per question."""
    r1 = r5 = rr = 0.0
    for ranking, question in zip(rankings, questions, strict=True):
        expected = set(question.expected)
        rank = next((i for i, p in enumerate(ranking[:10], 1) if p in expected), None)
        if rank is not None:
            r1 += rank == 1
            r5 += rank <= 5
            rr += 1 / rank
    n = max(len(questions), 1)
    return {"r@1": r1 / n, "r@5": r5 / n, "mrr@10": rr / n, "questions": len(questions)}


_STOP = frozenset(
    [
        "a",
        "about",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "should",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
    ]
)


def markdown_notes(vault_root: Path) -> list[Path]:
    """The notes the baseline reads: every `.md` file outside dot-folders, in path order."""
    return [
        file
        for file in sorted(vault_root.rglob("*.md"))
        if not any(part.startswith(".") for part in file.relative_to(vault_root).parts)
    ]


def fts5_rank(
    vault_root: Path, questions: Sequence[Question], k: int = 10, *, trigram: bool = False
) -> list[list[str]]:
    """The baseline: FTS5 (porter) over whole notes, title = file stem weighted 5×, OR query.

    `trigram`: FTS5's trigram tokenizer instead, the baseline for scripts written without
    spaces (porter's unicode61 keeps a whole run of Han or kana as one token): the query is
    every 3-character substring of each of its words (shorter words dropped), OR-ed."""
    db = sqlite3.connect(":memory:")
    tokenize = "trigram" if trigram else "porter"
    db.execute(
        f"CREATE VIRTUAL TABLE n USING fts5(path UNINDEXED, title, body, tokenize={tokenize})"
    )
    for file in markdown_notes(vault_root):
        rel = file.relative_to(vault_root).as_posix()
        body = file.read_text(encoding="utf-8", errors="replace")
        db.execute("INSERT INTO n VALUES (?, ?, ?)", (rel, file.stem, body))
    out = []
    for question in questions:
        words = [w for w in re.findall(r"\w+", question.q.lower()) if w not in _STOP]
        if trigram:
            words = list(dict.fromkeys(w[i : i + 3] for w in words for i in range(len(w) - 2)))
        match = " OR ".join(f'"{w}"' for w in words) or '""'
        rows = db.execute(
            "SELECT path FROM n WHERE n MATCH ? ORDER BY bm25(n, 0, 5.0, 1.0) LIMIT ?", (match, k)
        ).fetchall()
        out.append([r[0] for r in rows])
    return out
