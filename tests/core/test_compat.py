"""The private APIs core/compat.py lists are there, in the versions it says they are tested on:
an upgrade past a range fails here first, not in a parse or a filter check."""

from __future__ import annotations

import sys
from importlib.metadata import version

import pytest

from vaultmem.core import compat


def _minor(text: str) -> tuple[int, int]:
    major, minor = text.split(".")[:2]
    return int(major), int(minor)


@pytest.mark.parametrize("package", sorted(compat.TESTED))
def test_the_installed_version_is_in_the_tested_range(package: str) -> None:
    low, high = compat.TESTED[package]
    installed = (
        f"{sys.version_info.major}.{sys.version_info.minor}"
        if package == "python"
        else version(package)
    )
    assert _minor(low) <= _minor(installed) <= _minor(high), (package, installed)


def test_the_private_names_exist() -> None:
    from mistune import list_parser
    from mistune.block_parser import BlockParser

    assert callable(list_parser._compile_list_break_sc)
    assert callable(BlockParser._parse_indent_code_fast)
    from mistune.inline_parser import InlineParser

    assert callable(InlineParser._get_fast_trigger_re)
    from mistune import helpers

    assert callable(helpers._parse_link_href)
    assert compat.sre_parser.parse("(a|b)+")
    assert compat.sre_constants.MAXREPEAT
    assert compat.yaml_c_parser().__name__ == "CParser"


def test_the_list_scanner_is_ours_and_keeps_mistunes_output() -> None:
    import mistune
    from mistune import list_parser

    from vaultmem.note import markdown  # noqa: F401  (installs the scanner)

    assert list_parser._compile_list_break_sc.__qualname__.startswith("_cached_list_breaks")
    text = "- a\n- b\n\n  c\n- d\n"
    assert (
        mistune.html(text)
        == "<ul>\n<li><p>a</p>\n</li>\n<li><p>b</p>\n<p>c</p>\n</li>\n<li><p>d</p>\n</li>\n</ul>\n"
    )
