"""Deterministic generator of realistic Obsidian vaults for the benchmarks.

Owns the benchmark corpus: `generate_vault(root, n_notes, seed)` writes a vault of Markdown notes
(YAML frontmatter, headings, prose, lists, tasks, callouts, fenced code, `^block` ids, inline and
nested tags, wikilinks with headings/blocks/aliases, embeds, Markdown links, links to missing notes,
a few duplicate file names) and returns its counts. All randomness comes from one seeded
`random.Random`, and nothing iterates a `set`, so the same arguments give a byte-identical tree in
any process. Prose is drawn Zipf-like from a fixed vocabulary (~400 real words, generated
identifiers such as `vault_root`/`TestPagerOrder`, and rare coined terms) mixed with per-topic
words, so BM25 has common, topical and rare terms to tell apart. About 2 KB per note on average.

Script: `python benchmarks/generate_vault.py OUT --notes 10000 --seed 0`.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import re
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import date, timedelta
from itertools import accumulate
from pathlib import Path

GENERATOR_VERSION = "1"
"""Bump when the output changes, so cached vaults under `benchmarks/out/` are regenerated."""

OUT_DIR = Path(__file__).resolve().parent / "out"
CONFIG_TOML = 'managed_folder = "agent-memory"\n'
MANAGED_FOLDER = "agent-memory"


def _words(text: str) -> list[str]:
    return text.split()


# Function words first: with Zipf weights by rank they dominate, as in real English prose.
_FUNCTION_WORDS = _words(
    """
the of and to a in is that for it as with was on be by this are or not from at which but have an
they we can you all has if more when will would there their been one so about also than into only
other some could its them these may then do what up out new like should our after any first most
how over such between where both through because each just those used while very much
"""
)

_CONTENT_WORDS = _words(
    """
vault note notes index query search link links graph edge backlink tag tags folder file files path
paths parse parser token tokens term terms posting postings score ranking result results cache
memory agent agents session project scope topic topics context recall store forget bundle export
import schema table tables column row rows batch transaction lock writer reader snapshot rebuild
reconcile fingerprint hash digest change changes plan planner watch watcher event events debounce
latency throughput benchmark median baseline regression test tests fixture property invariant
error errors problem warning hint config setting option flag command server client request response
stream buffer chunk worker process thread pool queue deadline timeout retry backoff failure release
version upgrade migration deploy build pipeline review design decision tradeoff constraint budget
meeting agenda summary action owner status priority draft idea question answer reference paper
reading chapter book article draft outline sketch diagram figure chart metric dashboard alert
incident outage postmortem runbook oncall pager rotation customer user team roadmap milestone
sprint backlog estimate deadline launch feature bug fix patch issue ticket branch commit merge
document markdown heading section paragraph list item task checkbox quote callout block code
snippet function method class module package library dependency interface contract protocol
network socket port address storage disk volume backup restore archive compression encoding
unicode string number integer float date time timezone calendar week month year morning evening
weekly daily monthly quarterly review retrospective lesson learning insight pattern principle
model vector embedding similarity cluster sample dataset training evaluation accuracy precision
recall signal noise bias variance experiment hypothesis observation measurement analysis report
garden kitchen travel health sleep exercise coffee music film recipe budget invoice account
language grammar word sentence phrase translation story character plot scene dialogue theme
privacy security secret token credential permission policy audit compliance risk threat
performance profile trace span log logs sampling histogram percentile memory allocation leak
window terminal editor shortcut plugin theme layout sidebar panel tab workspace canvas
"""
)

_FIRST_NAMES = _words(
    """
Ada Alan Grace Linus Barbara Ken Dennis Margaret Edsger Donald Frances Leslie Radia John Sophie
Yuki Amara Mateo Priya Lars Ingrid Tomas Noor Chen Aiko Kwame Elena Omar Hana Felix
"""
)
_LAST_NAMES = _words(
    """
Lovelace Turing Hopper Torvalds Liskov Thompson Ritchie Hamilton Dijkstra Knuth Allen Lamport
Perlman McCarthy Wilson Tanaka Okafor Garcia Sharma Nilsson Berg Novak Haddad Wei Sato Mensah
Petrova Farouk Kim Wagner
"""
)

_SYLLABLES = _words(
    """
ka zo ri mu te vex lo qua ne ther sil an dor ix ul pra gen ko vi nar el tu shi bra mor lin
"""
)

_TAG_ROOTS = _words(
    """
project area resource status type topic lang team idea reading meeting review research
"""
)
_TAG_LEAVES = _words(
    """
alpha beacon cedar delta backend frontend infra ml search storage perf security docs ops
active done blocked someday draft python rust sql go inbox weekly
"""
)

# (folder, weight, note type). Up to three deep; "" is the vault root.
_FOLDERS: tuple[tuple[str, int, str], ...] = (
    ("", 3, "note"),
    ("Inbox", 5, "idea"),
    ("Daily", 10, "daily"),
    ("Daily/2024", 8, "daily"),
    ("People", 4, "person"),
    ("Projects", 3, "project"),
    ("Projects/Alpha", 6, "project"),
    ("Projects/Alpha/Meetings", 6, "meeting"),
    ("Projects/Beacon", 5, "project"),
    ("Projects/Beacon/Design", 5, "design"),
    ("Areas/Engineering", 5, "note"),
    ("Areas/Engineering/Backend", 6, "note"),
    ("Areas/Engineering/Frontend", 4, "note"),
    ("Areas/Research", 4, "note"),
    ("Areas/Research/Papers", 5, "reference"),
    ("Resources", 3, "reference"),
    ("Resources/Reading", 4, "reference"),
    ("Resources/Snippets", 4, "snippet"),
    ("Archive", 3, "note"),
    ("Archive/2023", 4, "note"),
    ("Archive/2023/Q4", 3, "meeting"),
)

_CODE_LANGS = ("python", "bash", "sql", "yaml", "ts", "")
_CALLOUTS = ("note", "tip", "warning", "info", "question", "todo")
_START = date(2023, 1, 2)
_SLOT = re.compile("\x00(\\d+)\x00")


@dataclass(frozen=True, slots=True)
class GeneratedVault:
    """Counts describing a generated vault (every count is exact, not estimated).

    `links` counts every note link as Obsidian would: body wikilinks (incl. Dataview fields),
    embeds, Markdown links to `.md` files and the frontmatter `related` property. Fake links inside
    fenced code are not counted. `dangling_links` point at notes or attachments that do not exist;
    `ambiguous_links` use a bare name shared by two files.
    """

    root: Path
    notes: int
    folders: int
    bytes: int
    links: int
    wikilinks: int
    embeds: int
    markdown_links: int
    property_links: int
    dangling_links: int
    ambiguous_links: int
    code_blocks: int
    duplicate_names: int
    seed: int
    generator_version: str = GENERATOR_VERSION

    @property
    def megabytes(self) -> float:
        return self.bytes / 1_000_000

    def to_json(self) -> dict[str, object]:
        data = asdict(self)
        data["root"] = str(self.root)
        return data


@dataclass(slots=True)
class _NotePlan:
    """What other notes need to know about a note before any note is rendered."""

    folder: str
    stem: str
    kind: str
    topic: int
    day: date
    aliases: list[str]
    headings: list[tuple[int, str]]
    blocks: list[str]
    weight: float

    @property
    def path(self) -> str:
        return f"{self.folder}/{self.stem}.md" if self.folder else f"{self.stem}.md"


@dataclass(slots=True)
class _Counts:
    wikilinks: int = 0
    embeds: int = 0
    markdown_links: int = 0
    property_links: int = 0
    dangling: int = 0
    ambiguous: int = 0
    code_blocks: int = 0
    bytes: int = 0
    per_note_links: list[int] = field(default_factory=list)


class _Vocabulary:
    """The word list with Zipf cumulative weights, plus per-topic word lists."""

    def __init__(self) -> None:
        # A fixed seed: the vocabulary is the same for every vault seed, so runs are comparable.
        rng = random.Random("vaultmem-vocabulary-v1")
        content = sorted(dict.fromkeys(_CONTENT_WORDS))
        idents: list[str] = []
        for _ in range(700):
            if rng.random() < 0.5:
                idents.append("_".join(rng.sample(content, rng.randint(2, 3))))
            else:
                parts = rng.sample(content, rng.randint(2, 3))
                prefix = rng.choice(("", "", "Test", "Base", "Abstract"))
                idents.append(prefix + "".join(p.capitalize() for p in parts))
        coined: list[str] = []
        for _ in range(2200):
            word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))
            coined.append(word + (str(rng.randint(2, 99)) if rng.random() < 0.08 else ""))
        rng.shuffle(content)
        # Rank order (Zipf by rank): function words, content words, identifiers, coined terms.
        words = list(dict.fromkeys(_FUNCTION_WORDS + content + idents + coined))
        self.words: list[str] = words
        self.cum: list[float] = list(accumulate(1.0 / (r + 2) ** 1.1 for r in range(len(words))))
        self.heading_words: list[str] = sorted(content)
        self.identifiers: list[str] = idents
        self.topics: list[list[str]] = [
            rng.sample(content, 12) + rng.sample(idents, 6) + rng.sample(coined, 6)
            for _ in range(40)
        ]


@functools.cache
def _vocabulary() -> _Vocabulary:
    return _Vocabulary()


def _yaml_scalar(value: str) -> str:
    """Plain YAML scalar when safe, otherwise double-quoted (dates, numbers, bools stay strings)."""
    plain = (
        value
        and value[0].isalpha()
        and all(c.isalnum() or c in " _.-" for c in value)
        and value.lower() not in {"yes", "no", "on", "off", "true", "false", "null", "y", "n"}
    )
    if plain:
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


class _Generator:
    def __init__(self, n_notes: int, seed: int) -> None:
        self.rng = random.Random(seed)
        self.n = n_notes
        self.vocab = _vocabulary()
        self.counts = _Counts()
        self.plans: list[_NotePlan] = []
        self.dup_stems: dict[str, None] = {}
        self.taken: dict[str, None] = {}
        self.tags = [f"{r}/{leaf}" for r in _TAG_ROOTS for leaf in _TAG_LEAVES[:6]]
        self.tags += [*_TAG_LEAVES, "todo", "important", "later", "y2024", "til"]

    # -- planning -------------------------------------------------------------------------------

    def plan(self) -> None:
        rng = self.rng
        folders = [f for f, _, _ in _FOLDERS]
        fweights = list(accumulate(w for _, w, _ in _FOLDERS))
        kinds = {f: k for f, _, k in _FOLDERS}
        for i in range(self.n):
            folder = rng.choices(folders, cum_weights=fweights)[0]
            kind = kinds[folder]
            day = _START + timedelta(days=rng.randint(0, 700))
            stem = self._title(kind, day)
            tries = 0
            while stem.lower() in self.taken:
                tries += 1
                if kind == "daily":  # one note per day: move to a free day; a vault with more
                    # daily notes than 4,000 days (100k notes) widens the range after 50 tries
                    span = 4000 if tries < 50 else 4000 + len(self.taken)
                    day = _START + timedelta(days=rng.randint(0, span))
                stem = self._title(kind, day)
                if tries >= 50 and kind != "daily":  # a name space smaller than the vault
                    stem = f"{stem} {tries}"
            self.taken[stem.lower()] = None
            self.plans.append(
                _NotePlan(
                    folder=folder,
                    stem=stem,
                    kind=kind,
                    topic=rng.randrange(len(self.vocab.topics)),
                    day=day,
                    aliases=self._aliases(stem),
                    headings=self._headings(),
                    blocks=[self._block_id() for _ in range(rng.choice((0, 0, 0, 1, 1, 2)))],
                    # Heavy-tailed popularity: a few hub notes collect most backlinks.
                    weight=1.0 / (i % 997 + 1) ** 0.8 if rng.random() < 0.3 else 0.01,
                )
            )
        self._duplicate_names()

    def _duplicate_names(self) -> None:
        """Give a few notes the stem of another note in a different folder (ambiguous links)."""
        rng = self.rng
        n_dups = min(self.n // 2, max(2, self.n // 150)) if self.n >= 4 else 0
        for _ in range(n_dups):
            src, dst = rng.sample(self.plans, 2)
            if src.folder == dst.folder or src.stem.lower() in self.dup_stems:
                continue
            if dst.stem.lower() in self.dup_stems:
                continue
            dst.stem = src.stem
            self.dup_stems[src.stem.lower()] = None

    def _title(self, kind: str, day: date) -> str:
        rng = self.rng
        if kind == "daily":
            return day.isoformat()
        if kind == "person":
            return f"{rng.choice(_FIRST_NAMES)} {rng.choice(_LAST_NAMES)}"
        words = self._heading_words(rng.randint(1, 4))
        if kind == "meeting":
            return f"{day.isoformat()} {words}"
        if rng.random() < 0.1:
            return rng.choice(self.vocab.identifiers)
        return words

    def _heading_words(self, k: int) -> str:
        rng = self.rng
        vocab = self.vocab
        words = [
            rng.choice(vocab.heading_words if rng.random() < 0.9 else vocab.identifiers)
            for _ in range(k)
        ]
        words[0] = words[0][:1].upper() + words[0][1:]
        return " ".join(words)

    def _aliases(self, stem: str) -> list[str]:
        rng = self.rng
        if rng.random() >= 0.2:
            return []
        out = []
        initials = "".join(w[0] for w in stem.split() if w[:1].isalpha()).upper()
        if len(initials) >= 2:
            out.append(initials)
        if rng.random() < 0.5 or not out:
            out.append(self._heading_words(rng.randint(1, 3)).lower())
        return out

    def _headings(self) -> list[tuple[int, str]]:
        rng = self.rng
        out = [(2, self._heading_words(rng.randint(1, 4)))]
        for _ in range(rng.randint(1, 4)):
            out.append((rng.choice((2, 2, 3)), self._heading_words(rng.randint(1, 4))))
        return out

    def _block_id(self) -> str:
        return "".join(self.rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(6))

    # -- rendering ------------------------------------------------------------------------------

    def render(self, idx: int, cum_weights: list[float]) -> str:
        rng = self.rng
        plan = self.plans[idx]
        n_links = rng.randint(3, 10)
        related = rng.random() < 0.25
        inline_field = rng.random() < 0.15
        self.counts.per_note_links.append(n_links)
        front = self._frontmatter(plan, cum_weights, idx, related)
        body_links = [self._link(idx, cum_weights) for _ in range(n_links - related - inline_field)]
        slots: list[list[str]] = []
        blocks: list[str] = []
        if rng.random() < 0.5:
            blocks.append(f"# {plan.stem}")
        if rng.random() < 0.6:
            blocks.append(self._paragraph(plan, slots))
        if inline_field:
            blocks.append(f"up:: {self._link(idx, cum_weights, plain=True)}")
        code_at = rng.randrange(len(plan.headings)) if rng.random() < 0.2 else -1
        block_ids = list(plan.blocks)
        for h_i, (level, heading) in enumerate(plan.headings):
            blocks.append("#" * level + " " + heading)
            for _ in range(rng.choice((1, 1, 2, 2, 3))):
                roll = rng.random()
                if roll < 0.62:
                    para = self._paragraph(plan, slots)
                    if block_ids and rng.random() < 0.5:
                        para += f" ^{block_ids.pop()}"
                    blocks.append(para)
                elif roll < 0.88:
                    blocks.append(self._list(plan, slots))
                else:
                    blocks.append(self._callout(plan, slots))
            if h_i == code_at:
                blocks.append(self._code_block())
                self.counts.code_blocks += 1
        for para_id in block_ids:  # ids not yet placed go on a closing paragraph each
            blocks.append(self._paragraph(plan, slots) + f" ^{para_id}")
        for link in body_links:
            slot = rng.choice(slots)
            slot.insert(rng.randint(1, len(slot)), link)
        for _ in range(rng.choice((0, 1, 1, 2, 3))):
            slot = rng.choice(slots)
            slot.insert(rng.randint(1, len(slot)), "#" + rng.choice(self.tags))
        # Blocks hold placeholders for their word runs ("slots"), filled only now because links
        # and tags are inserted into the slots after the layout is fixed.
        body = _SLOT.sub(lambda m: " ".join(slots[int(m[1])]), "\n\n".join(blocks))
        return front + body + "\n"

    def _slot(self, plan: _NotePlan, slots: list[list[str]], lo: int, hi: int) -> str:
        rng = self.rng
        vocab = self.vocab
        n = rng.randint(lo, hi)
        n_topic = n // 5
        words = rng.choices(vocab.words, cum_weights=vocab.cum, k=n - n_topic)
        words += rng.choices(vocab.topics[plan.topic], k=n_topic)
        rng.shuffle(words)
        if rng.random() < 0.15:
            pos = rng.randrange(len(words))
            words[pos] = f"`{words[pos]}`"
        elif rng.random() < 0.1:
            pos = rng.randrange(len(words))
            words[pos] = f"**{words[pos]}**"
        words[0] = words[0][:1].upper() + words[0][1:]
        if n > 10 and rng.random() < 0.4:
            words[n // 2] += ","
        slots.append(words)
        return f"\x00{len(slots) - 1}\x00"

    def _paragraph(self, plan: _NotePlan, slots: list[list[str]]) -> str:
        sentences = [self._slot(plan, slots, 6, 18) + "." for _ in range(self.rng.randint(1, 4))]
        return " ".join(sentences)

    def _list(self, plan: _NotePlan, slots: list[list[str]]) -> str:
        rng = self.rng
        style = rng.choice(("- ", "- ", "* ", "1. ", "- [ ] ", "- [x] "))
        items = []
        for i in range(rng.randint(2, 6)):
            marker = f"{i + 1}. " if style == "1. " else style
            items.append(marker + self._slot(plan, slots, 3, 12))
            if rng.random() < 0.1:
                items.append("    - " + self._slot(plan, slots, 3, 8))
        return "\n".join(items)

    def _callout(self, plan: _NotePlan, slots: list[list[str]]) -> str:
        kind = self.rng.choice(_CALLOUTS)
        return f"> [!{kind}] {self._heading_words(2)}\n> " + self._slot(plan, slots, 8, 20) + "."

    def _code_block(self) -> str:
        rng = self.rng
        lang = rng.choice(_CODE_LANGS)
        fence = "~~~" if rng.random() < 0.1 else "```"
        ident = rng.choice(self.vocab.identifiers)
        lines = [
            f"# see [[not a link]] and #notatag in {ident}",
            f"value = {ident}(path)  # [[Fake Note#Heading|nope]] #alsonotatag",
        ]
        for _ in range(rng.randint(1, 6)):
            lines.append(f"{rng.choice(self.vocab.words[60:400])}_{rng.randint(0, 9)} = {ident}")
        return f"{fence}{lang}\n" + "\n".join(lines) + f"\n{fence}"

    def _frontmatter(
        self, plan: _NotePlan, cum_weights: list[float], idx: int, related: bool
    ) -> str:
        rng = self.rng
        lines = ["---"]
        if rng.random() < 0.4:
            title = plan.stem if rng.random() < 0.7 else f"{plan.stem}: {self._heading_words(2)}"
            lines.append(f"title: {_yaml_scalar(title)}")
        lines.append(f"type: {plan.kind}")
        tags = [rng.choice(self.tags) for _ in range(rng.randint(0, 4))]
        tags = list(dict.fromkeys(tags))
        if not tags:
            lines.append("tags: []")
        elif rng.random() < 0.35:
            lines.append("tags: [" + ", ".join(tags) + "]")
        else:
            lines.append("tags:")
            lines.extend(f"  - {t}" for t in tags)
        if plan.aliases:
            lines.append("aliases:")
            lines.extend(f"  - {_yaml_scalar(a)}" for a in plan.aliases)
        lines.append(f"created: {plan.day.isoformat()}")
        if rng.random() < 0.5:
            updated = plan.day + timedelta(days=rng.randint(0, 60))
            hh, mm = rng.randint(6, 22), rng.randint(0, 59)
            lines.append(f"updated: {updated.isoformat()}T{hh:02d}:{mm:02d}:00")
        if rng.random() < 0.3:
            lines.append(f"status: {rng.choice(('draft', 'active', 'done', 'someday'))}")
        if rng.random() < 0.05:
            lines.append(f"draft: {rng.choice(('yes', 'no', 'true', 'false'))}")
        if related:
            target = self._link(idx, cum_weights, plain=True)
            lines.append(f'related: "{target}"')
            self.counts.property_links += 1
            self.counts.wikilinks -= 1  # `_link` counted it as a body wikilink
        lines.append("---\n\n")
        return "\n".join(lines)

    def _target(self, idx: int, cum_weights: list[float]) -> _NotePlan:
        while True:
            plan = self.rng.choices(self.plans, cum_weights=cum_weights)[0]
            if plan is not self.plans[idx] or self.n == 1:
                return plan

    def _name(self, plan: _NotePlan) -> str:
        """How a link names its target: bare stem, or folder-qualified for duplicates."""
        if plan.stem.lower() in self.dup_stems:
            if self.rng.random() < 0.6 and plan.folder:
                return f"{plan.folder}/{plan.stem}"
            self.counts.ambiguous += 1
        return plan.stem

    def _missing_name(self) -> str:
        """A plausible note name that no note has (a link written before its note)."""
        while True:
            name = self._heading_words(self.rng.randint(1, 4))
            if name.lower() not in self.taken:
                return name

    def _link(self, idx: int, cum_weights: list[float], plain: bool = False) -> str:
        """One link token. `plain` gives a `[[wikilink]]` (for properties and inline fields)."""
        rng = self.rng
        if rng.random() < 0.06:
            self.counts.wikilinks += 1
            self.counts.dangling += 1
            return f"[[{self._missing_name()}]]"
        roll = rng.random()
        target = self._target(idx, cum_weights)
        name = self._name(target)
        if plain or roll < 0.5:
            self.counts.wikilinks += 1
            return f"[[{name}]]"
        if roll < 0.62:
            self.counts.wikilinks += 1
            return f"[[{name}#{rng.choice(target.headings)[1]}]]"
        if roll < 0.74:
            self.counts.wikilinks += 1
            display = rng.choice(target.aliases) if target.aliases else self._heading_words(2)
            return f"[[{name}|{display.lower()}]]"
        if roll < 0.78:
            self.counts.wikilinks += 1
            if target.blocks:
                return f"[[{name}#^{rng.choice(target.blocks)}]]"
            return f"[[{name}#{rng.choice(target.headings)[1]}|see here]]"
        if roll < 0.86:
            self.counts.embeds += 1
            if rng.random() < 0.25:
                self.counts.dangling += 1
                return f"![[diagram-{rng.randint(1, 500)}.png]]"
            return f"![[{name}]]"
        self.counts.markdown_links += 1
        url = target.path.replace(" ", "%20")
        return f"[{self._heading_words(rng.randint(1, 3)).lower()}]({url})"


def generate_vault(root: Path, n_notes: int, seed: int = 0) -> GeneratedVault:
    """Write a vault of `n_notes` notes into `root` (absent or empty) and return its counts."""
    if n_notes < 1:
        raise ValueError("n_notes must be at least 1")
    if root.exists() and any(root.iterdir()):
        raise FileExistsError(f"{root} is not empty")
    gen = _Generator(n_notes, seed)
    gen.plan()
    cum_weights = list(accumulate(p.weight for p in gen.plans))
    root.mkdir(parents=True, exist_ok=True)
    made: dict[str, None] = {}
    for idx, plan in enumerate(gen.plans):
        text = gen.render(idx, cum_weights)
        folder = root / plan.folder if plan.folder else root
        if plan.folder not in made:
            folder.mkdir(parents=True, exist_ok=True)
            made[plan.folder] = None
        data = text.encode("utf-8")
        (folder / f"{plan.stem}.md").write_bytes(data)
        gen.counts.bytes += len(data)
    (root / ".vaultmem").mkdir(exist_ok=True)
    (root / ".vaultmem" / "config.toml").write_text(CONFIG_TOML, encoding="utf-8")
    (root / MANAGED_FOLDER).mkdir(exist_ok=True)
    (root / ".obsidian").mkdir(exist_ok=True)
    (root / ".obsidian" / "app.json").write_text('{\n  "userIgnoreFilters": []\n}\n')
    c = gen.counts
    return GeneratedVault(
        root=root,
        notes=n_notes,
        folders=len([f for f in made if f]),
        bytes=c.bytes,
        links=sum(c.per_note_links),
        wikilinks=c.wikilinks,
        embeds=c.embeds,
        markdown_links=c.markdown_links,
        property_links=c.property_links,
        dangling_links=c.dangling,
        ambiguous_links=c.ambiguous,
        code_blocks=c.code_blocks,
        duplicate_names=len(gen.dup_stems),
        seed=seed,
    )


def ensure_vault(
    n_notes: int, seed: int = 0, out_dir: Path = OUT_DIR
) -> tuple[Path, GeneratedVault, float | None]:
    """The cached vault `out_dir/vault-<N>-<seed>/`, generated when missing or stale.

    Returns (root, counts, seconds spent generating or None when cached). A sidecar
    `vault-<N>-<seed>.json` records the counts and the generator version; the vault is written
    to a temporary folder and renamed into place, so an interrupted run leaves no half vault.
    """
    root = out_dir / f"vault-{n_notes}-{seed}"
    manifest = out_dir / f"vault-{n_notes}-{seed}.json"
    if root.is_dir() and manifest.is_file():
        data = json.loads(manifest.read_text(encoding="utf-8"))
        if data.get("generator_version") == GENERATOR_VERSION:
            data["root"] = root
            return root, GeneratedVault(**data), None
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / f".tmp-vault-{n_notes}-{seed}-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    start = time.perf_counter()
    counts = generate_vault(tmp, n_notes, seed)
    seconds = time.perf_counter() - start
    if root.exists():
        shutil.rmtree(root)
    os.replace(tmp, root)
    counts = replace(counts, root=root)
    manifest.write_text(json.dumps(counts.to_json(), indent=2) + "\n", encoding="utf-8")
    return root, counts, seconds


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("out", type=Path, help="folder to write the vault into (absent or empty)")
    parser.add_argument("--notes", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        counts = generate_vault(args.out, args.notes, args.seed)
    except FileExistsError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    seconds = time.perf_counter() - start
    if args.json:
        print(json.dumps({**counts.to_json(), "seconds": round(seconds, 3)}))
    else:
        print(
            f"{counts.notes} notes, {counts.megabytes:.1f} MB, {counts.links} links "
            f"({counts.wikilinks} wikilinks, {counts.embeds} embeds, {counts.markdown_links} "
            f"markdown, {counts.property_links} property; {counts.dangling_links} dangling), "
            f"{counts.folders} folders, in {seconds:.2f} s -> {counts.root}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
