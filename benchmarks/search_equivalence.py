"""Search results as a fingerprint, and warm `Vault.search` timed: for comparing two code trees.

A speed change to search must change no result. `dump` runs ~200 queries through
`Vault.search` on a reconciled vault, both from the resident index (after its load) and from
SQL (`resident_max_postings = 0`): bench_search's 50 queries, the same at limits 1, 3 and 50,
"phrases", -exclusions, the --folder/--tag/--type options and tag:/type:/path: operators,
typos, and words that make the redaction look closer (token, password, key). It writes every
hit in full (`to_jsonable`, what `--json` prints; floats as `repr`, exact) and prints one
SHA-256 per path. Run it from each tree's own folder and compare the hashes (`python -m` puts
the working directory first on `sys.path`, ahead of `PYTHONPATH`: run from this repository, it
imports this tree's `vaultmem` whatever `PYTHONPATH` names):

    cd /path/to/tree && python -m benchmarks.search_equivalence dump --vault DIR --out F

`time` runs bench_search's 50 queries warm (resident index loaded) `--rounds` times and prints
the median per query in ms; alternate it between two trees to compare them in one spell:

    python -m benchmarks.search_equivalence time --vault DIR [--rounds 20]

`ab` compares this tree's `Vault.search` with another tree's in one process (the other's
`vaultmem` package copied under another name, its imports rewritten): both load their resident
index, then take turns query by query, `--rounds` passes over the 50 queries, and the ratio of
the medians is printed; ratios across processes moved by ±15 % on the shared machine.

    python -m benchmarks.search_equivalence ab --vault DIR --baseline /path/to/other/tree
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.bench_search import _join_loader, draw_queries

_WORD = re.compile(r"[A-Za-z][a-z]{3,}")
Case = tuple[str, dict[str, str], int]  # query, SearchFilters fields, limit


def _texts(root: Path) -> list[str]:
    """Section texts in bench_search's order (the source of its 50 queries)."""
    from vaultmem.storage import store
    from vaultmem.vault import Vault

    vault = Vault(root)
    with store.reading(vault.config.index_path) as con:
        rows = con.execute(
            "SELECT d.note_id, coalesce(d.heading, ''), d.text FROM documents d "
            "ORDER BY d.note_id, d.ord"
        ).fetchall()
    return [t for _, _, t in rows[:20_000]]


def cases(texts: Sequence[str], seed: int = 0) -> list[Case]:
    """~200 queries covering the operators, filters, typos and limits."""
    base = draw_queries(texts)
    rng = random.Random(seed)
    out: list[Case] = [(q, {}, 10) for q in base]
    out += [(q, {}, limit) for q, limit in zip(base[:36], [1, 3, 50] * 12, strict=True)]
    sample = [t for t in rng.sample(list(texts), min(400, len(texts))) if len(_WORD.findall(t)) > 6]
    for text in sample[:25]:  # a phrase of two or three adjacent words, sometimes with a word
        words = _WORD.findall(text)
        i = rng.randrange(len(words) - 3)
        phrase = " ".join(words[i : i + rng.choice((2, 3))])
        out.append((f'"{phrase}"' + rng.choice(("", f" {words[-1]}")), {}, 10))
    for q in base[:20]:  # an exclusion of a word of another query
        out.append((f"{q} -{rng.choice(base).split()[0]}", {}, 10))
    options = [
        {"folder": "Projects"},
        {"folder": "Areas/"},
        {"tag": "review"},
        {"tag": "#project"},
        {"type": "meeting"},
        {"type": "note", "folder": "Daily"},
        {"scope": "vault"},
    ]
    for i, q in enumerate(base[:21]):
        out.append((q, options[i % len(options)], 10))
    operators = ["tag:research", "type:daily", "path:Resources", "tag:team type:note"]
    for i, q in enumerate(base[21:37]):
        out.append((f"{q} {operators[i % len(operators)]}", {}, 10))
    for q in base[:20]:  # a typo: one letter of the longest word dropped
        longest = max(q.split(), key=len)
        if len(longest) >= 5:
            cut = rng.randrange(1, len(longest) - 1)
            out.append((q.replace(longest, longest[:cut] + longest[cut + 1 :]), {}, 10))
    out += [
        (q, {}, 10)
        for q in (
            "api token",
            "password reset",
            "secret key rotation",
            "access key",
            "bearer auth login",
            "private credentials",
            "the token",
            "storage latency storage",
        )
    ]
    return out


def _run(root: Path, all_cases: Sequence[Case], resident: bool) -> list[Any]:
    from vaultmem.adapters.output import to_jsonable
    from vaultmem.core.errors import VaultmemError
    from vaultmem.search.query import SearchFilters
    from vaultmem.vault import Vault

    vault = Vault(root)
    if resident:
        _load_resident(vault, all_cases[0][0], all_cases[0][0])
    else:
        vault.resident_max_postings = 0
    out: list[Any] = []
    for text, options, limit in all_cases:
        try:
            hits = vault.search(text, SearchFilters(**options), limit=limit)  # type: ignore[arg-type]
            out.append([text, options, limit, to_jsonable(hits)])
        except VaultmemError as exc:
            out.append([text, options, limit, {"error": exc.code}])
    if resident:
        assert vault._resident is not None, "the resident index was dropped"
    vault.close()
    return out


def dump(root: Path, out: Path) -> None:
    all_cases = cases(_texts(root))
    result = {
        "resident": _run(root, all_cases, resident=True),
        "sql": _run(root, all_cases, resident=False),
    }
    for name, rows in result.items():
        blob = json.dumps(rows, ensure_ascii=False, sort_keys=True).encode()
        hits = sum(len(r[3]) for r in rows if isinstance(r[3], list))
        digest = hashlib.sha256(blob).hexdigest()
        print(f"{name}: {len(rows)} queries, {hits} hits, sha256 {digest}")
    out.write_text(json.dumps(result, ensure_ascii=False, sort_keys=True, indent=1))


def _warmed(vault: Any, queries: list[str]) -> Any:
    """`vault` after the searches that load its resident index (the second one starts the
    load) and one untimed pass over `queries`, so the timed passes read memory only."""
    _load_resident(vault, queries[0], queries[1])
    for q in queries:
        vault.search(q)
    return vault


def _load_resident(vault: Any, first: str, second: str) -> None:
    """Two searches (the second starts the resident index's load in a thread), then wait."""
    vault.search(first)
    vault.search(second)
    _join_loader(vault)
    assert vault._resident is not None, "the resident index did not load"


def time_warm(root: Path, rounds: int) -> None:
    from vaultmem.vault import Vault

    queries = draw_queries(_texts(root))
    vault = _warmed(Vault(root), queries)
    per_query: list[list[float]] = [[] for _ in queries]
    for _ in range(rounds):
        for i, q in enumerate(queries):
            start = time.perf_counter()
            vault.search(q)
            per_query[i].append(time.perf_counter() - start)
    vault.close()
    medians = [statistics.median(runs) for runs in per_query]
    flat = sorted(t for runs in per_query for t in runs)
    print(
        f"median {statistics.median(flat) * 1000:.3f} ms; mean of per-query medians "
        f"{statistics.mean(medians) * 1000:.3f} ms ({rounds} rounds x {len(queries)} queries)"
    )


def _baseline_package(tree: Path, out: Path) -> Any:
    """The `vaultmem` package of another tree, copied into `out` and imported beside ours as
    `vaultmem_base`."""
    import importlib

    imports = re.compile(r"\b(from|import) vaultmem\b")
    for path in (tree / "vaultmem").rglob("*"):
        target = out / "vaultmem_base" / path.relative_to(tree / "vaultmem")
        if path.is_dir():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".py":
            target.write_text(imports.sub(r"\1 vaultmem_base", path.read_text()))
        else:
            target.write_bytes(path.read_bytes())
    sys.path.insert(0, str(out))
    return importlib.import_module("vaultmem_base.vault")


def ab(root: Path, baseline: Path, rounds: int) -> None:
    import tempfile

    # the copy lives as long as the run: the trees import lazily inside their functions
    with tempfile.TemporaryDirectory(prefix="vaultmem-base-") as tmp:
        _ab(root, _baseline_package(baseline, Path(tmp)), rounds)


def _ab(root: Path, theirs: Any, rounds: int) -> None:
    from vaultmem import vault as ours

    queries = draw_queries(_texts(root))
    vaults = {
        "this tree": _warmed(ours.Vault(root), queries),
        "baseline": _warmed(theirs.Vault(root), queries),
    }
    runs: dict[str, list[float]] = {name: [] for name in vaults}
    for _ in range(rounds):
        for q in queries:
            for name, vault in vaults.items():
                start = time.perf_counter()
                vault.search(q)
                runs[name].append(time.perf_counter() - start)
    medians = {name: statistics.median(times) * 1000 for name, times in runs.items()}
    print(
        f"median: this tree {medians['this tree']:.3f} ms, baseline {medians['baseline']:.3f} ms,"
        f" ratio {medians['this tree'] / medians['baseline']:.3f} ({rounds} rounds x "
        f"{len(queries)} queries, taking turns)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("action", choices=("dump", "time", "ab"))
    parser.add_argument("--vault", type=Path, required=True, help="a reconciled vault")
    parser.add_argument("--out", type=Path, default=Path("search-results.json"))
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--baseline", type=Path, help="another tree, for `ab`")
    args = parser.parse_args(argv)
    if args.action == "dump":
        dump(args.vault, args.out)
    elif args.action == "ab":
        ab(args.vault, args.baseline, args.rounds)
    else:
        time_warm(args.vault, args.rounds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
