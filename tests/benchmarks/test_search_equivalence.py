"""benchmarks/search_equivalence: the fingerprint a speed change to search is checked with.

The benchmark's claim is that a hash of ~200 searches tells two code trees apart when a result
changes; here it runs on a small generated vault: the resident index and SQL must hash alike
(the resident index answers what SQL answers), and the cases must cover what the docstring lists.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.generate_vault import generate_vault  # noqa: E402
from benchmarks.search_equivalence import _texts, cases, dump  # noqa: E402
from vaultmem.vault import Vault  # noqa: E402


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("equivalence") / "vault"
    generate_vault(root, 400, seed=3)
    Vault(root).reconcile()
    return root


def test_cases_cover_operators_filters_typos_and_limits(generated: Path) -> None:
    all_cases = cases(_texts(generated))
    queries = [q for q, _, _ in all_cases]
    assert len(all_cases) >= 150
    assert {1, 3, 10, 50} <= {limit for _, _, limit in all_cases}
    assert any(q.startswith('"') for q in queries)  # phrases
    assert any(" -" in q for q in queries)  # exclusions
    assert any("tag:" in q or "type:" in q or "path:" in q for q in queries)
    assert {"folder", "tag", "type", "scope"} <= {k for _, o, _ in all_cases for k in o}


@pytest.mark.slow
def test_resident_and_sql_searches_hash_alike(
    generated: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "dump.json"
    dump(generated, out)
    printed = dict(line.split(": ", 1) for line in capsys.readouterr().out.splitlines())
    resident, sql = printed["resident"].split("sha256 ")[1], printed["sql"].split("sha256 ")[1]
    assert resident == sql
    result = json.loads(out.read_text())
    hits = [row[3] for row in result["resident"] if isinstance(row[3], list)]
    assert sum(map(len, hits)) > 100  # the queries find notes: the hash covers real hits
    assert result["resident"] == result["sql"]
