"""Every use of another package's private API, in one place, with the versions it is tested on.

A private name can change in any release, so each use is listed here with the range of
versions the suite runs on (`TESTED`); tests/core/test_compat.py fails when an installed
version leaves its range or a name is gone, so an upgrade is a decision, not a surprise, and
pyproject.toml's upper bounds keep installs inside the ranges.

- `re._parser`, `re._constants` (CPython 3.11-3.13): the parse tree of a filter regex, which
  `config.is_safe_filter_regex` walks to refuse patterns that backtrack exponentially. The
  public `re` API has no parse tree.
- mistune `list_parser._compile_list_break_sc`, `BlockParser._parse_indent_code_fast` and
  `InlineParser._get_fast_trigger_re` (mistune 3.4): note/markdown.py's parser replaces the
  first (`replace_list_break_scanner`, here) and overrides the other two in its parser
  subclasses (calling mistune's through `super()`); all keep mistune's output as it is and only
  skip repeated work per list item, per block start and per inline scan.
- mistune `helpers._parse_link_href` (mistune 3.4): a link destination's scanner, a Python
  loop over every character of it, is replaced (`replace_link_href`, here) by one that takes
  the usual destination (no parenthesis, backslash or control character before its end) with
  one regex match and hands every other to mistune's own.
- `yaml._yaml.CParser` (PyYAML 6.0): libyaml's parser and composer without PyYAML's
  constructors, which note/properties.py pairs with its YAML 1.2 core resolver.
- `_duckdb` (duckdb 1.1-2.0): the engine module without the `duckdb` package's Python
  relational API around it. storage/store.py imports it (only storage may import DuckDB,
  tests/integration/test_architecture.py) and falls back to `duckdb` when it is absent.
- The CLI uses click through its public API only (adapters/cli.py), pinned in pyproject.toml.
"""

from __future__ import annotations

from collections.abc import Callable
from re import _constants as sre_constants  # type: ignore[attr-defined]
from re import _parser as sre_parser  # type: ignore[attr-defined]
from typing import Any, cast

__all__ = [
    "TESTED",
    "LinkHrefScanner",
    "ListBreakScanner",
    "replace_link_href",
    "replace_list_break_scanner",
    "sre_constants",
    "sre_parser",
]

TESTED: dict[str, tuple[str, str]] = {
    "python": ("3.11", "3.13"),
    "mistune": ("3.4", "3.4"),
    "pyyaml": ("6.0", "6.0"),
    "duckdb": ("1.1", "2.0"),
}
"""Package → (oldest, newest) `major.minor` the private uses above are tested on."""

ListBreakScanner = Callable[[Any, int], Any]


def replace_list_break_scanner(
    make: Callable[[ListBreakScanner], ListBreakScanner],
) -> tuple[ListBreakScanner, ListBreakScanner]:
    """Replace mistune's `list_parser._compile_list_break_sc` by `make(mistune's own)`; both
    functions, mistune's first."""
    from mistune import list_parser

    plain = list_parser._compile_list_break_sc
    installed = make(plain)
    list_parser._compile_list_break_sc = installed  # type: ignore[assignment]
    return plain, installed


LinkHrefScanner = Callable[..., tuple[Any, Any, int]]


def replace_link_href(
    make: Callable[[LinkHrefScanner], LinkHrefScanner],
) -> tuple[LinkHrefScanner, LinkHrefScanner]:
    """Replace mistune's `helpers._parse_link_href` (inline links and reference definitions
    both call it) by `make(mistune's own)`; both functions, mistune's first."""
    from mistune import helpers

    plain = helpers._parse_link_href
    installed = make(plain)
    helpers._parse_link_href = installed
    return plain, installed


def yaml_c_parser() -> type[Any]:
    """libyaml's C parser class (`yaml._yaml.CParser`; PyYAML's `yaml.cyaml` uses it but does
    not export it). ImportError when PyYAML was built without libyaml."""
    from yaml._yaml import CParser

    return cast(type[Any], CParser)
