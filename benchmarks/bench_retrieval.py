"""Retrieval quality: `vaultmem search` against the SQLite FTS5 baseline, same run, every set.

For each question set in `benchmarks/questions/` (see `benchmarks/retrieval.py`), the set's
vault is copied to `benchmarks/out/retrieval-<set>/` (its `.vaultmem/config.toml` kept when it
has one, else `Vault.init` maps the whole vault), reconciled, and every question is asked of
`Vault.search(q, limit=10)` and of `retrieval.fts5_rank` (porter, and trigram: the baseline for
scripts without spaces). Prints r@1, r@5 and MRR@10 per set, then each set's tune and test
halves (`questions/splits.json`: weights are chosen on tune halves, the test halves are the
figures quoted) beside both baselines, and per kind of question with `--kinds`; `--misses`
lists the questions vaultmem ranks worse than rank 1.

A set whose vault is external (`retrieval.EXTERNAL_VAULTS`: `obsidian-help` reads
`VAULTMEM_OBSIDIAN_HELP`, the `en/` folder of a checkout of obsidian-help; `obsidian-hub` reads
`VAULTMEM_OBSIDIAN_HUB`, the root of a checkout of obsidian-hub; `obsidian-help-zh`, `-ja`,
`-ko`, `-de` read `VAULTMEM_OBSIDIAN_HELP_ZH`, `_JA`, `_KO`, `_DE`, its `zh/`, `ja/`, `ko/`,
`de/` folders) is skipped with one line on stderr when its variable is unset or not a folder.
Each set reports how many notes the index holds and how many `.md` files the baseline read,
and says so when they differ.

A set in `retrieval.VARIANTS` runs on a changed copy (`dwarvesf-brain-boilerplate`: a footer
and a navigation line appended to 4 notes in 5), which both engines index; the run also ranks
its questions on an unchanged copy and prints how much each engine's rankings moved (the share
of questions with the same first note, the mean top-10 overlap).

`--modes` ranks every set again with semantic recall on, once per search mode (words,
vectors, hybrid), and applies the rule's quality half (docs/search.md; latency is
`benchmarks.bench_semantic`'s).

`--sweep` ranks again with other weights of the title document and the whole note;
`--proximity` with other weights and windows of term proximity (`search/proximity.py`; weight 0
is plain BM25), each row against FTS5; `--title` with other weights of the named-title boost
(weight 0: none), per half.

Usage: `python -m benchmarks.bench_retrieval [--quick] [--json] [--set NAME ...] [--kinds]
[--misses] [--sweep] [--proximity] [--no-boilerplate] [--modes] [--language LANG] [--fresh]`.
`--quick` is the same run (the sets are small). `--language` indexes every set with that
`[search] language` (e.g. `german`): what stemming in a note's own language would gain.

Each set's index is kept in the state folder between runs, so a run after a change to the
analysis measures the index that change's upgrade makes (as a user's `reconcile` would), and a
change made without a version bump is measured against the old index's terms. `--fresh` builds
every index from nothing, in a new state folder: how a variant is measured.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.generate_vault import OUT_DIR
from benchmarks.retrieval import (
    QUESTIONS_DIR,
    VARIANTS,
    Question,
    copy_vault,
    fts5_rank,
    load_questions,
    markdown_notes,
    metrics,
    missing_vault,
    question_sets,
    sample_notes,
    split_of,
    vault_for,
)

NAME = "retrieval"


def prepared_vault(
    name: str, variant: bool = True, language: str | None = None
) -> tuple[Path, int]:
    """A fresh copy of the set's vault with an index built by this vaultmem, and the number
    of notes the index holds; `variant` False leaves out the set's change to its vault
    (`retrieval.VARIANTS`); `language` sets its `[search] language` (the stemmer)."""
    from vaultmem.vault import Vault

    source = vault_for(name)
    target = OUT_DIR / f"retrieval-{name}{'' if variant else '-unchanged'}"
    shutil.rmtree(target, ignore_errors=True)
    missing = copy_vault(source, target, sample_notes(name))
    if missing:  # another checkout: the figures are not comparable with the documented ones
        print(
            f"{name}: {len(missing)} of the set's notes are not in {source} "
            f"(first: {missing[0]}); the figures are not those of the sample",
            file=sys.stderr,
        )
    if variant and name in VARIANTS:  # e.g. a footer appended to most notes
        VARIANTS[name](target)
    if not (target / ".vaultmem" / "config.toml").exists():
        Vault.init(target)
    if language is not None:
        _set_search_language(target / ".vaultmem" / "config.toml", language)
    return target, Vault(target).reconcile().notes


def _set_search_language(config: Path, language: str) -> None:
    """Set `[search] language` in the copy's config, replacing one the set's config already
    has (a second `language =` line would be a TOML error) and keeping the rest as written."""
    import tomlkit

    document = tomlkit.parse(config.read_text(encoding="utf-8"))
    search = document.get("search")
    if search is None:
        search = tomlkit.table()
        document["search"] = search
    search["language"] = language
    config.write_text(tomlkit.dumps(document), encoding="utf-8")


def vaultmem_rank(root: Path, questions: Sequence[Question], k: int = 10) -> list[list[str]]:
    from vaultmem.vault import Vault

    vault = Vault(root)
    return [[hit.path for hit in vault.search(q.q, limit=k)] for q in questions]


def sweep_rank(
    root: Path, questions: Sequence[Question], weights: tuple[float, float], k: int = 10
) -> list[list[str]]:
    """`search.search` with other weights of the title document and the whole note."""
    from vaultmem.search import query
    from vaultmem.storage import store
    from vaultmem.vault import Vault

    config = Vault(root).config
    with store.reading(config.index_path) as con:
        return [
            [
                hit.path
                for hit in query.search(
                    con,
                    q.q,
                    limit=k,
                    k1=config.bm25_k1,
                    b=config.bm25_b,
                    title_weight=weights[0],
                    whole_weight=weights[1],
                )
            ]
            for q in questions
        ]


SWEEP = [(t, w) for t in (0.0, 0.5, 1.0, 2.0) for w in (0.5, 1.0, 2.0, 4.0, 100.0)]
"""(title document weight, whole-note weight) pairs tried by `--sweep`, each on the whole set
and on its tune and test halves (a Chinese, Japanese or Korean set is ranked with exactly
these weights, not its script's blend)."""

PROXIMITY_SWEEP = [(w, n) for n in (8, 4) for w in (0.0, 0.05, 0.1, 0.15, 0.2, 0.3)]
"""(proximity weight, window) pairs tried by `--proximity` (weight 0: plain BM25)."""


def proximity_rank(
    root: Path, questions: Sequence[Question], setting: tuple[float, int], k: int = 10
) -> list[list[str]]:
    """`Vault.search` with another proximity weight and window (`search/proximity.py`)."""
    from vaultmem.search import proximity

    saved = proximity.WEIGHT, proximity.WINDOW
    proximity.WEIGHT, proximity.WINDOW = setting
    try:
        return vaultmem_rank(root, questions, k)
    finally:
        proximity.WEIGHT, proximity.WINDOW = saved


TITLE_SWEEP = [0.0, 0.03, 0.05, 0.075, 0.1, 0.125, 0.15]
"""Weights of the named-title boost tried by `--title` (`search/proximity.py`, `TITLE_WEIGHT`;
0: none)."""


def title_rank(
    root: Path, questions: Sequence[Question], weight: float, k: int = 10
) -> list[list[str]]:
    """`Vault.search` with another weight of the named-title boost (`proximity.TITLE_WEIGHT`)."""
    from vaultmem.search import proximity

    saved = proximity.TITLE_WEIGHT
    proximity.TITLE_WEIGHT = weight
    try:
        return vaultmem_rank(root, questions, k)
    finally:
        proximity.TITLE_WEIGHT = saved


def mode_metrics(name: str, questions: Sequence[Question]) -> dict[str, Any]:
    """Metrics of each search mode on a copy of the set's vault with semantic recall on."""
    from benchmarks import bench_semantic

    vault = bench_semantic.semantic_copy(
        vault_for(name), OUT_DIR / f"retrieval-modes-{name}", question_set=name
    )
    vault.reconcile()
    return bench_semantic.mode_metrics(vault, list(questions))


def run_set(
    name: str,
    do_sweep: bool = False,
    modes: bool = False,
    do_proximity: bool = False,
    do_title: bool = False,
    language: str | None = None,
) -> dict[str, Any]:
    questions = load_questions(QUESTIONS_DIR / f"{name}.jsonl")
    root, indexed = prepared_vault(name, language=language)
    ours = vaultmem_rank(root, questions)
    base = fts5_rank(root, questions)
    trigram = fts5_rank(root, questions, trigram=True)
    split = split_of(name, questions)
    halves = {
        half: {
            engine: metrics([ranks[i] for i in idx], [questions[i] for i in idx])
            for engine, ranks in (("vaultmem", ours), ("fts5", base), ("fts5_trigram", trigram))
        }
        for half, idx in (split or {}).items()
    }
    kinds: dict[str, Any] = {}
    for kind in sorted({q.kind for q in questions}):
        idx = [i for i, q in enumerate(questions) if q.kind == kind]
        sub = [questions[i] for i in idx]
        kinds[kind] = {
            "vaultmem": metrics([ours[i] for i in idx], sub),
            "fts5": metrics([base[i] for i in idx], sub),
        }
    sweep: dict[str, dict[str, float]] = {}
    for weights in SWEEP if do_sweep else ():  # held-out halves: choose on tune only
        ranks = sweep_rank(root, questions, weights)
        sweep[f"title {weights[0]}, whole {weights[1]}"] = metrics(ranks, questions)
        for half, idx in (split or {}).items():
            sub = [questions[i] for i in idx]
            label = f"title {weights[0]}, whole {weights[1]}, {half}"
            sweep[label] = metrics([ranks[i] for i in idx], sub)
    sweep.update(
        {
            f"proximity {w}, window {n}": metrics(proximity_rank(root, q_, (w, n)), q_)
            for q_ in (questions,)
            for w, n in (PROXIMITY_SWEEP if do_proximity else ())
        }
    )
    for weight in TITLE_SWEEP if do_title else ():  # held-out halves: choose on tune only
        ranks = title_rank(root, questions, weight)
        for half, idx in (split or {"all": list(range(len(questions)))}).items():
            sub = [questions[i] for i in idx]
            label = f"title named {weight}, {half}"
            sweep[label] = metrics([ranks[i] for i in idx], sub)
    stability = {}
    if name in VARIANTS:  # how far the change moved each engine's rankings
        clean, _ = prepared_vault(name, variant=False)
        stability = {
            "vaultmem": _agreement(ours, vaultmem_rank(clean, questions)),
            "fts5": _agreement(base, fts5_rank(clean, questions)),
        }
    misses = [
        {"q": q.q, "expected": q.expected, "got": r[:3], "fts5": b[:3]}
        for q, r, b in zip(questions, ours, base, strict=True)
        if not r or r[0] not in q.expected
    ]
    return {
        "set": name,
        "vault": str(vault_for(name)),
        "notes": {"vaultmem": indexed, "fts5": len(markdown_notes(root))},
        "vaultmem": metrics(ours, questions),
        "fts5": metrics(base, questions),
        "fts5_trigram": metrics(trigram, questions),
        "halves": halves,
        "kinds": kinds,
        "misses": misses,
        "sweep": sweep,
        "stability": stability,
        "modes": mode_metrics(name, questions) if modes else {},
    }


def _agreement(changed: list[list[str]], clean: list[list[str]]) -> dict[str, float]:
    """How much rankings on the changed vault agree with the unchanged vault's: the share of
    questions with the same first note, and the mean overlap of the top 10 (0..1)."""
    n = max(len(clean), 1)
    same = sum(bool(a and b and a[0] == b[0]) for a, b in zip(changed, clean, strict=True))
    overlap = sum(
        len(set(a[:10]) & set(b[:10])) / max(len(b[:10]), 1)
        for a, b in zip(changed, clean, strict=True)
    )
    return {"same top 1": same / n, "overlap@10": overlap / n}


def _row(label: str, ours: dict[str, float], base: dict[str, float]) -> str:
    def cells(m: dict[str, float]) -> str:
        return f"{m['r@1']:.2f} / {m['r@5']:.2f} / {m['mrr@10']:.3f}"

    wins = all(ours[k] > base[k] for k in ("r@1", "r@5", "mrr@10"))
    n = f"{ours['questions']:.0f}"
    return f"| {label} | {n} | {cells(ours)} | {cells(base)} | {'yes' if wins else 'no'} |"


def _half_row(name: str, half: str, m: dict[str, dict[str, float]]) -> str:
    def cells(x: dict[str, float]) -> str:
        return f"{x['r@1']:.2f} / {x['r@5']:.2f} / {x['mrr@10']:.3f}"

    ours = m["vaultmem"]
    keys = ("r@1", "r@5", "mrr@10")
    rivals = (m["fts5"], m["fts5_trigram"])
    holds = all(ours[k] >= r[k] for r in rivals for k in keys)
    above = holds and all(ours["r@1"] > r["r@1"] for r in rivals)
    n = f"{ours['questions']:.0f}"
    return (
        f"| {name} | {half} | {n} | {cells(ours)} | {cells(m['fts5'])} "
        f"| {cells(m['fts5_trigram'])} | {'yes' if above else 'no'} |"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="same run (the sets are small)")
    parser.add_argument("--json", action="store_true", help="one JSON object on one line")
    parser.add_argument("--set", action="append", default=[], help="a question set name")
    parser.add_argument("--kinds", action="store_true", help="a row per kind of question")
    parser.add_argument("--misses", action="store_true", help="list questions not at rank 1")
    parser.add_argument(
        "--sweep", action="store_true", help="also rank with other weights of the whole note"
    )
    parser.add_argument(
        "--proximity", action="store_true", help="also rank with other proximity weights"
    )
    parser.add_argument(
        "--title",
        action="store_true",
        help="also rank with other weights of the named-title boost, per half",
    )
    parser.add_argument(
        "--no-boilerplate",
        action="store_true",
        help="index boilerplate lines like any text (measures what the rule gains)",
    )
    parser.add_argument(
        "--modes", action="store_true", help="also rank with semantic recall on, every mode"
    )
    parser.add_argument(
        "--language", help="index every set with this [search] language (a Snowball stemmer)"
    )
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="build every index from nothing, in a state folder of this run's own",
    )
    args = parser.parse_args(argv)
    if args.fresh:  # the kept indexes would otherwise be upgraded, as a user's reconcile does
        state = tempfile.mkdtemp(prefix="vaultmem-retrieval-")
        atexit.register(shutil.rmtree, state, True)
        os.environ["VAULTMEM_STATE_DIR"] = state
    if args.no_boilerplate:  # the rule runs in this process, in the postings load
        from vaultmem.storage import search_rows

        search_rows.BOILERPLATE_NOTES = sys.maxsize
    names = args.set or question_sets()
    for name in names:
        if (reason := missing_vault(name)) is not None:
            print(reason, file=sys.stderr)
    results = [
        run_set(name, args.sweep, args.modes, args.proximity, args.title, args.language)
        for name in names
        if vault_for(name).exists()
    ]
    if args.json:
        print(json.dumps({"benchmark": NAME, "sets": results}))
        return 0
    print(
        "| question set | questions | vaultmem r@1 / r@5 / MRR@10 | FTS5 r@1 / r@5 / MRR@10 "
        "| above FTS5 on all three |"
    )
    print("|---|---|---|---|---|")
    for res in results:
        if res["notes"]["vaultmem"] != res["notes"]["fts5"]:
            counts = ", ".join(f"{k} {v}" for k, v in res["notes"].items())
            print(f"{res['set']}: the engines read different notes ({counts})", file=sys.stderr)
    for res in results:
        print(_row(res["set"], res["vaultmem"], res["fts5"]))
        if args.kinds:
            for kind, m in res["kinds"].items():
                print(_row(f"  {res['set']} · {kind}", m["vaultmem"], m["fts5"]))
    print(
        "\nHeld-out halves (benchmarks/questions/splits.json; the test halves are the figures "
        "quoted):\n\n| question set | half | questions | vaultmem r@1 / r@5 / MRR@10 "
        "| FTS5 porter | FTS5 trigram | at or above both, r@1 above |\n"
        "|---|---|---|---|---|---|---|"
    )
    for half in ("test", "tune"):
        for res in results:
            if half in res["halves"]:
                print(_half_row(res["set"], half, res["halves"][half]))
    for res in results:
        for weight, m in res["sweep"].items():
            print(_row(f"  {res['set']} · {weight}", m, res["fts5"]))
    for res in results:
        for engine, agreement in res["stability"].items():
            cells = ", ".join(f"{k} {v:.2f}" for k, v in agreement.items())
            print(f"{res['set']}: {engine} against the unchanged vault: {cells}")
    if args.modes:
        from benchmarks.bench_semantic import hybrid_wins
        from vaultmem.search.vectors import DEFAULT_WHEN_ON

        print("\n| question set | mode | r@1 | r@5 | MRR@10 |\n|---|---|---|---|---|")
        for res in results:
            for mode, m in res["modes"].items():
                cells = f"{m['r@1']:.2f} | {m['r@5']:.2f} | {m['mrr@10']:.3f}"
                print(f"| {res['set']} | {mode} | {cells} |")
        wins = hybrid_wins({res["set"]: res["modes"] for res in results})
        print(
            f"hybrid above words on r@5 and MRR@10 on every set: {wins}; default {DEFAULT_WHEN_ON}"
        )
    if args.misses:
        for res in results:
            for miss in res["misses"]:
                print(f"[{res['set']}] {miss['q']!r}: want {miss['expected']}")
                print(f"    got  {miss['got']}\n    fts5 {miss['fts5']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
