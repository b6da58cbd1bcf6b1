"""`make bench` runs every `benchmarks/bench_*.py` module's `main(["--quick", "--json"])`
(`benchmarks/run.py`): a module that refuses those flags, or needs an argument the runner does
not pass, breaks the whole run."""

from __future__ import annotations

import argparse
import importlib
from typing import Any

import pytest

from benchmarks.run import bench_modules


class _Parsed(Exception):
    """Raised once a benchmark's flags parsed: the benchmark itself is not run here."""


@pytest.mark.parametrize("name", bench_modules())
def test_every_benchmark_takes_the_runners_flags(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = argparse.ArgumentParser.parse_args

    def parse_then_stop(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> Any:
        real(self, *args, **kwargs)  # refused flags or a missing argument exit with 2 here
        raise _Parsed

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_then_stop)
    module = importlib.import_module(f"benchmarks.bench_{name}")
    with pytest.raises(_Parsed):
        module.main(["--quick", "--json"])
