"""Config loading, validation messages, vault discovery and the TOML writer."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from vaultmem.core.config import (
    Config,
    FolderMapping,
    find_vault,
    init_vault,
    is_safe_filter_regex,
    load_config,
    render_config,
)
from vaultmem.core.errors import ConfigError, VaultNotFoundError
from vaultmem.files.scan import scan_vault


def write_config(root: Path, text: str) -> Path:
    path = root / ".vaultmem" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def config_error(root: Path, text: str) -> str:
    path = write_config(root, text)
    with pytest.raises(ConfigError) as info:
        load_config(root)
    message = info.value.message
    assert str(path) in message
    return message


MAPPED = """
[[mappings]]
folder = "Notes"
scope = "project"
scope_id = "acme"
"""


# -- defaults and the happy path ---------------------------------------------------------------


def test_vault_without_config_gets_defaults(tmp_path: Path) -> None:
    vault = tmp_path / "My Vault"
    vault.mkdir()
    config = load_config(vault)
    assert config.root == vault.resolve()
    assert config.managed_folder == "agent-memory"
    assert config.mappings == (FolderMapping("", "project", "my-vault"),)
    assert config.max_note_bytes == 5_000_000
    assert (config.bm25_k1, config.bm25_b) == (1.2, 0.75)
    assert config.state_dir == vault.resolve() / ".vaultmem"
    assert config.index_path == config.state_dir / "index.duckdb"
    assert config.config_path == config.state_dir / "config.toml"


def test_full_config_loads(tmp_path: Path) -> None:
    write_config(
        tmp_path,
        """
managed_folder = "Notes/agent-memory/"
max_note_bytes = 1000
exclude = ["Templates/**", "/^Drafts//"]
[search]
k1 = 2
b = 0.5
[[mappings]]
folder = "Notes/"
scope = "project"
[[mappings]]
folder = "Journal"
scope = "session"
scope_id = "w48"
[[mappings]]
folder = "Shared"
scope = "global"
[[secrets.patterns]]
name = "internal-token"
regex = "itk_[A-Za-z0-9]{20}"
""",
    )
    config = load_config(tmp_path)
    assert config.managed_folder == "Notes/agent-memory"
    assert config.max_note_bytes == 1000
    assert config.exclude == ("Templates/**", "/^Drafts//")
    assert (config.bm25_k1, config.bm25_b) == (2.0, 0.5)
    assert config.mappings == (
        FolderMapping("Notes", "project", "notes"),  # the id defaults to the folder's name
        FolderMapping("Journal", "session", "w48"),
        FolderMapping("Shared", "global", None),
    )
    assert config.secret_patterns == (("internal-token", "itk_[A-Za-z0-9]{20}"),)


def test_path_questions(tmp_path: Path) -> None:
    config = Config(
        root=tmp_path,
        managed_folder="Notes/mem",
        mappings=(
            FolderMapping("Notes", "project", "acme"),
            FolderMapping("Note", "global", None),
        ),
    )
    assert config.mapping_for("Notes/a.md") == FolderMapping("Notes", "project", "acme")
    assert config.mapping_for("Note/a.md") == FolderMapping("Note", "global", None)
    assert config.mapping_for("Notes2/a.md") is None  # segment boundary, not a string prefix
    assert config.mapping_for("a.md") is None
    assert config.is_managed("Notes/mem") and config.is_managed("Notes/mem/x.md")
    assert not config.is_managed("Notes/memo.md")
    assert config.scope_of("Notes/a.md") == ("project", "acme")
    assert config.scope_of("Elsewhere/a.md") is None
    # Topics in the managed folder carry their scope in their path.
    assert config.scope_of("Notes/mem/global/k.md") == ("global", None)
    assert config.scope_of("Notes/mem/session/s1/k.md") == ("session", "s1")
    assert config.scope_of("Notes/mem/project/other/k.md") == ("project", "other")
    assert config.scope_of("Notes/mem/project/k.md") == ("project", "acme")  # no id: mapping's
    assert config.scope_of("Notes/mem/README.md") == ("project", "acme")


def test_whole_vault_mapping_matches_everything(tmp_path: Path) -> None:
    config = Config(root=tmp_path, mappings=(FolderMapping("", "project", "v"),))
    assert config.mapping_for("a.md") == FolderMapping("", "project", "v")
    assert config.scope_of("deep/down/a.md") == ("project", "v")


def test_obsidian_ignore_filters_are_added(tmp_path: Path) -> None:
    (tmp_path / ".obsidian").mkdir()
    (tmp_path / ".obsidian" / "app.json").write_text(
        json.dumps({"userIgnoreFilters": ["Archive/", "/\\.excalidraw\\.md$/", "/[/", 3, ""]})
    )
    write_config(tmp_path, 'exclude = ["Templates/**"]\n')
    config = load_config(tmp_path)
    # Prefixes become anchored regexes; an uncompilable regex and non-strings are skipped.
    assert config.obsidian_exclude == ("/^Archive//", "/\\.excalidraw\\.md$/")
    assert config.exclude == ("Templates/**", "/^Archive//", "/\\.excalidraw\\.md$/")
    assert config.config_exclude == ("Templates/**",)


@pytest.mark.parametrize(
    "regex",
    [
        "^(a|aa)+$",  # issue 16: one scan took 15 s
        "(a+)+$",
        "(\\w+\\s?)+$",
        "(.*)*x",
        "(a|)+b",
        "x" * 1001,
    ],
)
def test_obsidian_regex_that_may_backtrack_exponentially_is_skipped(
    tmp_path: Path, regex: str
) -> None:
    assert not is_safe_filter_regex(regex)
    (tmp_path / ".obsidian").mkdir()
    (tmp_path / ".obsidian" / "app.json").write_text(
        json.dumps({"userIgnoreFilters": [f"/{regex}/", "Archive/"]})
    )
    write_config(tmp_path, "")
    assert load_config(tmp_path).obsidian_exclude == ("/^Archive//",)


@pytest.mark.parametrize(
    "regex", ["^Archive/", "\\.excalidraw\\.md$", "(Temp|Old)/", "(foo|bar)+/", "x{2,5}"]
)
def test_ordinary_obsidian_regexes_pass_the_backtracking_check(regex: str) -> None:
    assert is_safe_filter_regex(regex)


@pytest.mark.timeout(60)  # a hang guard: the scan tries every filter on every path
def test_scan_with_a_skipped_filter_stays_fast(tmp_path: Path) -> None:
    (tmp_path / ".obsidian").mkdir()
    (tmp_path / ".obsidian" / "app.json").write_text(
        json.dumps({"userIgnoreFilters": ["/^(a|aa)+$/"]})
    )
    (tmp_path / ("a" * 60 + "b.md")).write_text("x")
    write_config(tmp_path, "")
    config = load_config(tmp_path)
    assert "a" * 60 + "b.md" in scan_vault(config).files


def test_broken_obsidian_app_json_is_ignored(tmp_path: Path) -> None:
    (tmp_path / ".obsidian").mkdir()
    (tmp_path / ".obsidian" / "app.json").write_text("{not json")
    assert load_config(tmp_path).exclude == ()


# -- validation errors name the file and the key ------------------------------------------------


@pytest.mark.parametrize(
    ("text", "key", "fragment"),
    [
        ("manged_folder = 'x'\n", "manged_folder", "did you mean 'managed_folder'"),
        ("managed_folder = 3\n", "managed_folder", "must be a string"),
        ("managed_folder = ''\n", "managed_folder", "not the whole vault"),
        ("managed_folder = '/abs'\n", "managed_folder", "is absolute"),
        ("managed_folder = 'a/../b'\n", "managed_folder", "'..' segments"),
        ("managed_folder = 'a\\\\b'\n", "managed_folder", "no backslashes"),
        ("managed_folder = '.hidden'\n", "managed_folder", "hidden folders"),
        ("max_note_bytes = 0\n", "max_note_bytes", "positive integer"),
        ("max_note_bytes = true\n", "max_note_bytes", "positive integer"),
        ("exclude = 'x'\n", "exclude", "must be a list"),
        ("exclude = ['ok', '']\n", "exclude[1]", "non-empty string"),
        ("exclude = ['/(/']\n", "exclude[0]", "not a valid regular expression"),
        ("search = 1\n", "search", "must be a table"),
        ("[search]\nk2 = 1\n", "search.k2", "unknown key"),
        ("[search]\nk1 = 'a'\n", "search.k1", "must be a number"),
        ("[search]\nk1 = -1\n", "search.k1", ">= 0"),
        ("[search]\nb = 1.5\n", "search.b", "between 0 and 1"),
        ("[search]\nb = nan\n", "search.b", "finite"),
        ("mappings = 1\n", "mappings", "array of tables"),
        ("[[mappings]]\nscope = 'global'\n", "mappings[0].folder", "is required"),
        ("[[mappings]]\nfolder = 'A'\nscope = 'proj'\n", "mappings[0].scope", "allowed: session"),
        ("[[mappings]]\nfolder = 'A'\nscope = 'x'\nsize = 1\n", "mappings[0].size", "unknown"),
        ("[[mappings]]\nfolder = '../A'\nscope = 'global'\n", "mappings[0].folder", "'..'"),
        ("[[mappings]]\nfolder = '/A'\nscope = 'global'\n", "mappings[0].folder", "absolute"),
        ("[[mappings]]\nfolder = 'A'\nscope = 'session'\n", "mappings[0].scope_id", "required"),
        ("[[mappings]]\nfolder = 'A'\nscope = 'agent'\n", "mappings[0].scope_id", "required"),
        (
            "[[mappings]]\nfolder = 'A'\nscope = 'global'\nscope_id = 'g'\n",
            "mappings[0].scope_id",
            "must be absent",
        ),
        (
            "[[mappings]]\nfolder = 'A'\nscope = 'federated'\nscope_id = 'g'\n",
            "mappings[0].scope_id",
            "must be absent",
        ),
        (
            "[[mappings]]\nfolder = 'A'\nscope = 'project'\nscope_id = 'a/b'\n",
            "mappings[0].scope_id",
            "not a valid scope id",
        ),
        ("secrets = 1\n", "secrets", "must be a table"),
        ("[secrets]\npattern = 1\n", "secrets.pattern", "did you mean 'patterns'"),
        ("[[secrets.patterns]]\nregex = 'x'\n", "secrets.patterns[0].name", "required"),
        ("[[secrets.patterns]]\nname = 'n'\n", "secrets.patterns[0].regex", "required"),
        (
            "[[secrets.patterns]]\nname = 'n'\nregex = '(unclosed'\n",
            "secrets.patterns[0].regex",
            "not a valid regular expression",
        ),
        (
            "[[secrets.patterns]]\nname = 'Bad Name'\nregex = 'x'\n",
            "secrets.patterns[0].name",
            "lower-case",
        ),
        (
            "[[secrets.patterns]]\nname = 'n'\nregex = 'x*'\n",
            "secrets.patterns[0].regex",
            "empty string",
        ),
        (
            "[[secrets.patterns]]\nname = 'n'\nregex = 'a'\n[[secrets.patterns]]\nname = 'n'\n"
            "regex = 'b'\n",
            "secrets.patterns[1].name",
            "defined twice",
        ),
    ],
)
def test_validation_error_names_file_and_key(
    tmp_path: Path, text: str, key: str, fragment: str
) -> None:
    message = config_error(tmp_path, text)
    assert f": {key}: " in message
    assert fragment in message


def test_unknown_top_level_key_lists_allowed(tmp_path: Path) -> None:
    message = config_error(tmp_path, "colour = 'blue'\n")
    assert ": colour: unknown key; allowed: managed_folder, max_note_bytes" in message


def test_malformed_toml_reports_the_line(tmp_path: Path) -> None:
    message = config_error(tmp_path, 'managed_folder = "a"\nexclude = [\n  "x",\n  oops\n]\n')
    assert "invalid TOML" in message
    assert "line 4" in message


def test_non_utf8_config_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / ".vaultmem" / "config.toml"
    path.parent.mkdir()
    path.write_bytes(b"managed_folder = '\xff'\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_config(tmp_path)


def test_duplicate_mapping(tmp_path: Path) -> None:
    message = config_error(
        tmp_path,
        MAPPED + '[[mappings]]\nfolder = "Notes/"\nscope = "global"\n',
    )
    assert "mappings[1].folder: 'Notes' is already mapped by mappings[0]" in message


@pytest.mark.parametrize(
    ("first", "second"), [("Notes", "Notes/Sub"), ("Notes/Sub", "Notes"), ("", "Notes")]
)
def test_overlapping_mappings(tmp_path: Path, first: str, second: str) -> None:
    message = config_error(
        tmp_path,
        f'[[mappings]]\nfolder = "{first}"\nscope = "global"\n'
        f'[[mappings]]\nfolder = "{second}"\nscope = "global"\n',
    )
    assert "mappings[1].folder" in message
    assert "overlaps" in message


def test_sibling_with_common_prefix_is_not_an_overlap(tmp_path: Path) -> None:
    write_config(
        tmp_path,
        'managed_folder = "Notes/mem"\n'
        + MAPPED
        + '[[mappings]]\nfolder = "Notes2"\nscope = "global"\n',
    )
    assert len(load_config(tmp_path).mappings) == 2


def test_managed_folder_outside_every_mapping(tmp_path: Path) -> None:
    message = config_error(tmp_path, 'managed_folder = "agent-memory"\n' + MAPPED)
    assert ": managed_folder: 'agent-memory' lies in no mapped folder" in message


def test_managed_folder_inside_a_mapping_or_equal_to_one(tmp_path: Path) -> None:
    write_config(tmp_path, 'managed_folder = "Notes/agent-memory"\n' + MAPPED)
    assert load_config(tmp_path).managed_folder == "Notes/agent-memory"
    write_config(tmp_path, 'managed_folder = "Notes"\n' + MAPPED)
    assert load_config(tmp_path).managed_folder == "Notes"


def test_managed_folder_containing_mappings_is_in_none(tmp_path: Path) -> None:
    # Mappings cannot overlap, so "inside two mappings" cannot happen; a managed folder that
    # holds mapped folders instead of lying in one is refused.
    message = config_error(
        tmp_path,
        'managed_folder = "Projects"\n'
        '[[mappings]]\nfolder = "Projects/A"\nscope = "global"\n'
        '[[mappings]]\nfolder = "Projects/B"\nscope = "project"\n',
    )
    assert "lies in no mapped folder" in message


# -- find_vault ---------------------------------------------------------------------------------


def test_find_vault_prefers_explicit_then_env_then_walk(tmp_path: Path) -> None:
    walked = tmp_path / "walked"
    (walked / ".vaultmem").mkdir(parents=True)
    deep = walked / "a" / "b"
    deep.mkdir(parents=True)
    env_vault = tmp_path / "env"
    env_vault.mkdir()
    explicit = tmp_path / "explicit"
    explicit.mkdir()
    env = {"VAULTMEM_VAULT": str(env_vault)}
    assert find_vault(explicit, cwd=deep, environ=env) == explicit.resolve()
    assert find_vault(None, cwd=deep, environ=env) == env_vault.resolve()
    assert find_vault(None, cwd=deep, environ={}) == walked.resolve()
    assert find_vault(None, cwd=walked, environ={"VAULTMEM_VAULT": ""}) == walked.resolve()


def test_find_vault_errors(tmp_path: Path) -> None:
    with pytest.raises(VaultNotFoundError, match="--vault"):
        find_vault(tmp_path / "missing", cwd=tmp_path, environ={})
    with pytest.raises(VaultNotFoundError, match="VAULTMEM_VAULT"):
        find_vault(None, cwd=tmp_path, environ={"VAULTMEM_VAULT": str(tmp_path / "gone")})
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    with pytest.raises(VaultNotFoundError, match="not a folder"):
        find_vault(a_file, cwd=tmp_path, environ={})
    with pytest.raises(VaultNotFoundError) as info:
        find_vault(None, cwd=tmp_path, environ={})
    assert info.value.code == "vault_not_found"
    assert "--vault" in info.value.hint


def test_find_vault_reads_os_environ_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VAULTMEM_VAULT", str(tmp_path))
    assert find_vault(cwd=Path("/")) == tmp_path.resolve()


def test_load_config_of_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(VaultNotFoundError):
        load_config(tmp_path / "nope")


# -- init and rendering -------------------------------------------------------------------------


def test_init_vault_writes_config_and_managed_folder(tmp_path: Path) -> None:
    config = init_vault(
        tmp_path,
        managed_folder="Notes/memory",
        mappings=[FolderMapping("Notes", "project", "acme"), FolderMapping("K", "global", None)],
    )
    assert (tmp_path / "Notes" / "memory").is_dir()
    assert config.config_path.is_file()
    assert load_config(tmp_path) == config
    assert [p.name for p in config.state_dir.iterdir()] == ["config.toml"]  # no temp file left


def test_init_vault_default_mapping_is_written_out(tmp_path: Path) -> None:
    vault = tmp_path / "Team Notes"
    vault.mkdir()
    init_vault(vault)
    text = (vault / ".vaultmem" / "config.toml").read_text()
    assert 'folder = ""' in text and 'scope_id = "team-notes"' in text
    renamed = tmp_path / "Renamed"
    vault.rename(renamed)
    # The written id survives renaming the vault folder.
    assert load_config(renamed).mappings[0].scope_id == "team-notes"


def test_init_vault_refuses_to_overwrite(tmp_path: Path) -> None:
    init_vault(tmp_path)
    with pytest.raises(ConfigError, match="already exists") as info:
        init_vault(tmp_path, managed_folder="other")
    assert "--force" in info.value.hint
    config = init_vault(tmp_path, managed_folder="other", force=True)
    assert config.managed_folder == "other"


def test_init_vault_validates(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="managed_folder"):
        init_vault(tmp_path, managed_folder="../out")
    assert not (tmp_path / ".vaultmem" / "config.toml").exists()


def test_render_round_trips_awkward_strings(tmp_path: Path) -> None:
    config = Config(
        root=tmp_path.resolve(),
        managed_folder='Notes/"agent" memory',
        mappings=(FolderMapping("Notes", "project", "a.b_c-1"),),
        exclude=("Tab\there/**", "back\\slash", "/^ünïcode\\d+$/", "new\nline"),
        max_note_bytes=123,
        bm25_k1=1.0,
        bm25_b=1e-05,
        secret_patterns=(("quote-name", r'x"\d{3}\\'),),
    )
    write_config(tmp_path, render_config(config))
    assert load_config(tmp_path) == config


def test_render_leaves_obsidian_filters_out(tmp_path: Path) -> None:
    (tmp_path / ".obsidian").mkdir()
    (tmp_path / ".obsidian" / "app.json").write_text('{"userIgnoreFilters": ["Archive/"]}')
    write_config(tmp_path, 'exclude = ["T/**"]\n')
    text = render_config(load_config(tmp_path))
    assert tomllib.loads(text)["exclude"] == ["T/**"]
    assert "Archive" not in text


def test_example_vault_config(example_vault: Path) -> None:
    config = load_config(example_vault)
    assert config.managed_folder == "agent-memory"
    assert [m.folder for m in config.mappings] == [
        "Projects/Atlas",
        "Projects/Borealis",
        "Knowledge",
        "Journal",
        "agent-memory",
    ]
    assert config.obsidian_exclude == ("/^Knowledge/Archive//",)
    assert config.scope_of("agent-memory/project/borealis/consumer-lag-alerting.md") == (
        "project",
        "borealis",
    )
