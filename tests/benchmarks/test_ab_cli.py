"""The A/B timer runs both command lines in alternating order, each after the prepare step."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from benchmarks import ab_cli


def test_pairs_alternate_and_each_run_is_prepared(tmp_path: Path) -> None:
    log = tmp_path / "log"
    python = shlex.quote(sys.executable)

    def append(mark: str) -> str:
        return f"{python} -c \"open({str(log)!r}, 'a').write({mark!r})\""

    result = ab_cli.run_pairs(append("A"), append("B"), rounds=2, prepare=append("p"))
    # two warm-up rounds and two timed ones, the order flipping every round
    assert log.read_text() == "pApBpBpApApBpBpA"
    assert result["rounds"] == 2
    assert result["ratio_b_to_a"] == result["b_median_s"] / result["a_median_s"]
    # each side's CPU is its own command's: a Python start costs some, in one thread
    for side in "ab":
        assert 0 < result[f"{side}_cpu_median_s"] <= result[f"{side}_median_s"] * 2
