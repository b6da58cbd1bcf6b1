"""Where the vault is and how vaultmem reads it.

`find_vault` locates the vault (`--vault`, then `VAULTMEM_VAULT`, then the nearest folder at or
above the working directory holding `.vaultmem/` or `.obsidian/`). `load_config` reads
`.vaultmem/config.toml` plus Obsidian's own exclusion list (`userIgnoreFilters` in
`.obsidian/app.json`) and validates every key, naming the file and the key in each error.
`init_vault` writes the file atomically and creates the managed folder; `render_config` is the
small TOML emitter it uses (the standard library only reads TOML). A `Config` answers the path
questions every layer asks: which mapped folder holds a path, which scope a path belongs to,
whether a path is in the managed folder.

What people share lives in the vault (`.vaultmem/config.toml`, the managed folder); what one
machine keeps for itself (the index and its WAL, the writer lock, the last survey, the rename
journal, usage counts, the HTTP token) lives in the vault's *state folder*, outside the vault so
that no sync tool ships an open database between machines: `<base>/<vault name>-<digest of the
vault's real path>`, where the base is `$VAULTMEM_STATE_DIR`, else the config's `state_dir`,
else the platform's state directory (`~/.local/state/vaultmem` or `$XDG_STATE_HOME/vaultmem` on
Linux, `~/Library/Application Support/vaultmem` on macOS). Two processes on one machine that
open one vault find the same folder, so they share its locks; two clones, or two vaults, never
share an index (docs/machines.md).
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import sys
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from hashlib import blake2b
from pathlib import Path
from typing import Any, cast

from vaultmem.core.atomic import replace_file
from vaultmem.core.compat import sre_constants, sre_parser
from vaultmem.core.errors import ConfigError, InvalidArgumentError, VaultNotFoundError
from vaultmem.core.models import SCOPES, Scope

CONFIG_DIR_NAME = ".vaultmem"
"""The vault's own vaultmem folder: the shared configuration, nothing machine-local."""
STATE_DIR_NAME = CONFIG_DIR_NAME  # the name it had when the index lived there too
CONFIG_FILE_NAME = "config.toml"
INDEX_FILE_NAME = "index.duckdb"
ENV_VAULT = "VAULTMEM_VAULT"
ENV_STATE_DIR = "VAULTMEM_STATE_DIR"
STATE_RECORD_NAME = "vault.json"
"""In each state folder: which vault it belongs to (for people, and `status`)."""

DEFAULT_MANAGED_FOLDER = "agent-memory"
DEFAULT_MAX_NOTE_BYTES = 5_000_000
DEFAULT_BM25_K1 = 1.2
DEFAULT_BM25_B = 0.75

# Scopes shared machine-wide or vault-wide have no id; session and agent scopes are meaningless
# without one; a project may default its id to the mapped folder's name.
_SCOPES_WITHOUT_ID: frozenset[str] = frozenset({"global", "federated"})
_SCOPES_NEEDING_ID: frozenset[str] = frozenset({"session", "agent"})

# Scope ids become folder names under the managed folder (`agent-memory/project/<id>/`), so they
# must be one safe path segment.
_SCOPE_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")

_Fail = Callable[[str, str], ConfigError]
"""`fail(key, what)`: builds the ConfigError naming the file and the key."""

# The same rule as `secrets`: a pattern name ends up inside `[redacted:<name>]` markers.
_PATTERN_NAME_RE = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")

_TOP_KEYS = (
    "vault_id", "state_dir", "managed_folder", "max_note_bytes", "exclude", "search", "mappings",
    "secrets",
)  # fmt: skip
_VAULT_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_SEARCH_KEYS = ("k1", "b", "language", "semantic")
DEFAULT_SEARCH_LANGUAGE = "english"
SEARCH_LANGUAGES: tuple[str, ...] = (
    "none", "arabic", "armenian", "basque", "catalan", "czech", "danish", "dutch", "english",
    "esperanto", "estonian", "finnish", "french", "german", "greek", "hindi", "hungarian",
    "indonesian", "irish", "italian", "lithuanian", "nepali", "norwegian", "persian", "polish",
    "porter", "portuguese", "romanian", "russian", "serbian", "sesotho", "spanish", "swedish",
    "tamil", "turkish", "yiddish",
)  # fmt: skip
"""Stemmers for `[search] language`: PyStemmer's Snowball stemmers (Esperanto and Estonian came
with PyStemmer 3.0, Persian, Polish and Sesotho with 3.1, the least version required);
`none`: no stemming."""
_MAPPING_KEYS = ("folder", "scope", "scope_id")
_SECRETS_KEYS = ("patterns",)
_PATTERN_KEYS = ("name", "regex")


@dataclass(frozen=True, slots=True)
class FolderMapping:
    """A vault folder ("" = the whole vault) whose notes belong to one memory scope."""

    folder: str
    scope: Scope
    scope_id: str | None


@dataclass(frozen=True, slots=True)
class Config:
    """A validated vault configuration. Paths are vault-relative POSIX strings.

    `exclude` holds every exclusion vaultmem honours: the config file's entries first, then
    Obsidian's `userIgnoreFilters` translated to `/regex/` form (`obsidian_exclude`, a suffix of
    `exclude`). Each entry is a glob or a `/regex/`; see docs/configuration.md.
    """

    root: Path
    managed_folder: str = DEFAULT_MANAGED_FOLDER
    mappings: tuple[FolderMapping, ...] = ()
    exclude: tuple[str, ...] = ()
    max_note_bytes: int = DEFAULT_MAX_NOTE_BYTES
    bm25_k1: float = DEFAULT_BM25_K1
    bm25_b: float = DEFAULT_BM25_B
    search_language: str = DEFAULT_SEARCH_LANGUAGE
    semantic: bool = False
    """Embed search documents for `--mode vectors|hybrid` (the optional `semantic` extra)."""
    secret_patterns: tuple[tuple[str, str], ...] = ()
    obsidian_exclude: tuple[str, ...] = ()
    vault_id: str | None = None
    """The vault's stable id (`vault_id` in the config, so every clone has the same one)."""
    state_base: Path | None = field(default=None, compare=False)
    """The folder holding every vault's state folder: $VAULTMEM_STATE_DIR, else the config's
    `state_dir`, else the platform's state directory (None: read the first and the last now)."""
    state_base_setting: str | None = None
    """`state_dir` as the config file writes it (kept for `render_config`)."""

    @property
    def config_dir(self) -> Path:
        """The vault's `.vaultmem/`: the configuration people share."""
        return self.root / CONFIG_DIR_NAME

    @property
    def state_dir(self) -> Path:
        """This machine's folder for this vault: index, locks, journals (never in the vault)."""
        base = self.state_base if self.state_base is not None else default_state_base()
        return state_folder(base, self.root)

    @property
    def index_path(self) -> Path:
        return self.state_dir / INDEX_FILE_NAME

    @property
    def config_path(self) -> Path:
        return self.config_dir / CONFIG_FILE_NAME

    @property
    def config_exclude(self) -> tuple[str, ...]:
        """The exclusions written in the config file (without Obsidian's)."""
        n = len(self.obsidian_exclude)
        return self.exclude[: len(self.exclude) - n] if n else self.exclude

    def mapping_for(self, path: str) -> FolderMapping | None:
        """The mapping whose folder holds `path` (longest folder on segment boundaries)."""
        best: FolderMapping | None = None
        for mapping in self.mappings:
            if _is_within(path, mapping.folder) and (
                best is None or len(mapping.folder) > len(best.folder)
            ):
                best = mapping
        return best

    def is_managed(self, path: str) -> bool:
        """True for the managed folder itself and everything inside it."""
        return _is_within(path, self.managed_folder)

    def scope_of(self, path: str) -> tuple[Scope, str | None] | None:
        """The (scope, scope_id) a path belongs to, or None outside every mapped folder.

        Inside the managed folder, topics live at `<managed>/<scope>/[<scope_id>/]<key>.md` and
        that layout names their scope; any other path takes its mapping's scope.
        """
        if self.is_managed(path) and path != self.managed_folder:
            parts = path[len(self.managed_folder) + 1 :].split("/")
            head = parts[0]
            if len(parts) >= 2 and head in SCOPES:
                scope: Scope = head
                if scope in _SCOPES_WITHOUT_ID:
                    return scope, None
                if len(parts) >= 3:
                    return scope, parts[1]
        mapping = self.mapping_for(path)
        return None if mapping is None else (mapping.scope, mapping.scope_id)


def _is_within(path: str, folder: str) -> bool:
    return folder == "" or path == folder or path.startswith(folder + "/")


# ---------------------------------------------------------------------------------------------
# The machine-local state folder


def state_base(
    root: Path, setting: str | None = None, environ: Mapping[str, str] | None = None
) -> Path:
    """Where the vault's state folder goes: $VAULTMEM_STATE_DIR, else the config's `state_dir`
    (`setting`; `~` expanded, a relative path taken from the vault root), else the platform's
    state directory."""
    env = os.environ if environ is None else environ
    if not env.get(ENV_STATE_DIR) and setting:
        return (root / Path(setting).expanduser()).resolve()
    return default_state_base(env)


def default_state_base(environ: Mapping[str, str] | None = None) -> Path:
    """$VAULTMEM_STATE_DIR, else the platform's user state directory for vaultmem.

    The same folders as `platformdirs.user_state_dir("vaultmem", appauthor=False)` on Linux
    and macOS (a test pins them equal), written out here: importing platformdirs costs a cold
    command ~4-20 ms (it pulls in `tempfile` and `random`), and vaultmem runs on POSIX only.
    """
    env = os.environ if environ is None else environ
    if env.get(ENV_STATE_DIR):
        return Path(env[ENV_STATE_DIR]).expanduser()
    home = Path(env.get("HOME") or Path.home())
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "vaultmem"
    xdg = env.get("XDG_STATE_HOME", "").strip()
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else home / ".local" / "state"
    return base / "vaultmem"


@functools.lru_cache(maxsize=64)
def state_folder(base: Path, root: Path) -> Path:
    """`<base>/<vault folder name>-<digest>`: the digest is of the vault's real path (case
    folded where file systems ignore case by default), so every process on this machine that
    opens the vault by any path finds the one folder and its writer lock, and a second clone
    or a copy of the vault gets its own. A moved vault finds no state and rebuilds."""
    real = os.path.realpath(root)
    if sys.platform in ("darwin", "win32"):
        real = real.casefold()
    digest = blake2b(real.encode("utf-8", "surrogateescape"), digest_size=8).hexdigest()
    return Path(base) / f"{_slug(Path(real).name)[:40]}-{digest}"


# ---------------------------------------------------------------------------------------------
# Finding the vault


def find_vault(
    explicit: str | Path | None = None,
    *,
    cwd: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> Path:
    """The vault root: `explicit` (--vault), else $VAULTMEM_VAULT, else the nearest folder at or
    above `cwd` that holds `.vaultmem/` or `.obsidian/` (an Obsidian vault vaultmem has not
    been set up in yet is found as `--vault .` finds it). An explicit or env path must be an
    existing folder."""
    env = os.environ if environ is None else environ
    if explicit is not None and str(explicit) != "":
        return _existing_folder(Path(explicit), "--vault")
    from_env = env.get(ENV_VAULT, "")
    if from_env:
        return _existing_folder(Path(from_env), ENV_VAULT)
    start = (cwd if cwd is not None else Path.cwd()).resolve()
    for folder in (start, *start.parents):
        if (folder / CONFIG_DIR_NAME).is_dir() or (folder / ".obsidian").is_dir():
            return folder
    raise VaultNotFoundError(
        f"No vault found: no {CONFIG_DIR_NAME}/ or .obsidian/ folder in {start} or any folder "
        f"above it, no --vault and no {ENV_VAULT}."
    )


def _existing_folder(path: Path, source: str) -> Path:
    resolved = path.expanduser().resolve()
    if not resolved.exists():
        raise VaultNotFoundError(f"The vault folder {path} (from {source}) does not exist.")
    if not resolved.is_dir():
        raise VaultNotFoundError(f"The vault path {path} (from {source}) is not a folder.")
    return resolved


# ---------------------------------------------------------------------------------------------
# Loading and validating


def load_config(root: Path, environ: Mapping[str, str] | None = None) -> Config:
    """Read and validate `<root>/.vaultmem/config.toml`; a vault without one gets the defaults.
    `environ` (default: the process's) may set $VAULTMEM_STATE_DIR."""
    root = _existing_folder(Path(root), "the vault root")
    path = root / STATE_DIR_NAME / CONFIG_FILE_NAME
    raw: dict[str, object] = {}
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        data = None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    if data is not None:
        try:
            raw = tomllib.loads(data.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from exc
        except tomllib.TOMLDecodeError as exc:
            # tomllib's message carries "(at line L, column C)".
            raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    return _validate(root, path, raw, _obsidian_exclude(root), environ)


MAX_FILTER_REGEX_CHARS = 1000
"""Longest `/regex/` exclusion accepted from Obsidian's `userIgnoreFilters`."""

_REPEATS = (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT)


def is_safe_filter_regex(pattern: str) -> bool:
    r"""False for a regex that does not compile, is very long, or may backtrack exponentially.

    Python's `re` cannot be interrupted, and a filter is tried on every path of the vault, so
    one `/^(a|aa)+$/` made a single scan take 15 s (issue 16). The check is structural, on the
    compiled parse tree: a group repeated without bound may not itself hold an unbounded
    repeat (`(a+)+`) or alternatives that can start alike (`(a|aa)+`, `(a|)+`). Ordinary
    filters (`^Archive/`, `\.excalidraw\.md$`, `(foo|bar)/`) pass.
    """
    if len(pattern) > MAX_FILTER_REGEX_CHARS:
        return False
    try:
        tree = sre_parser.parse(pattern)
    except (re.error, RecursionError, OverflowError):
        return False
    return not _backtracks(list(tree), inside_repeat=False)


def _backtracks(items: list[Any], *, inside_repeat: bool) -> bool:
    for op, arg in items:
        if op in _REPEATS:
            _low, high, body = arg
            unbounded = high == sre_constants.MAXREPEAT or high > 1
            if unbounded and inside_repeat:
                return True
            if _backtracks(list(body), inside_repeat=inside_repeat or unbounded):
                return True
        elif op == sre_constants.BRANCH:
            alternatives = arg[1]
            if inside_repeat and not _distinct_starts(alternatives):
                return True
            if any(_backtracks(list(alt), inside_repeat=inside_repeat) for alt in alternatives):
                return True
        elif op == sre_constants.SUBPATTERN:
            if _backtracks(list(arg[3]), inside_repeat=inside_repeat):
                return True
        elif op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
            if _backtracks(list(arg[1]), inside_repeat=inside_repeat):
                return True
        elif op == sre_constants.GROUPREF_EXISTS:
            return True  # conditionals: too rare in a file filter to reason about
    return False


def _distinct_starts(alternatives: list[Any]) -> bool:
    """True when every alternative starts with a literal character no other one starts with."""
    firsts: set[int] = set()
    for alt in alternatives:
        items = list(alt)
        if not items or items[0][0] != sre_constants.LITERAL or items[0][1] in firsts:
            return False
        firsts.add(items[0][1])
    return True


def _obsidian_exclude(root: Path) -> tuple[str, ...]:
    """Obsidian's `userIgnoreFilters` as `/regex/` exclusions.

    Obsidian treats an entry written `/.../` as a regular expression and any other entry as a
    plain path prefix (no segment boundary: `Arch` also hides `Archive.md`). A prefix becomes
    `/^<escaped prefix>/`. The file belongs to Obsidian, which may be mid-write or hold filters
    we cannot compile: anything unusable is skipped rather than failing every command, and so
    is a regex that may backtrack exponentially (`is_safe_filter_regex`).
    """
    try:
        app = json.loads((root / ".obsidian" / "app.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ()
    filters = app.get("userIgnoreFilters") if isinstance(app, dict) else None
    if not isinstance(filters, list):
        return ()
    out: list[str] = []
    for item in filters:
        if not isinstance(item, str) or item == "":
            continue
        if len(item) > 2 and item.startswith("/") and item.endswith("/"):
            if not is_safe_filter_regex(item[1:-1]):
                continue
            out.append(item)
        else:
            out.append("/^" + re.escape(item) + "/")
    return tuple(dict.fromkeys(out))


def _validate(
    root: Path,
    file: Path,
    raw: Mapping[str, object],
    obsidian_exclude: tuple[str, ...],
    environ: Mapping[str, str] | None = None,
) -> Config:
    def fail(key: str, what: str) -> ConfigError:
        return ConfigError(f"{file}: {key}: {what}")

    _reject_unknown(raw, _TOP_KEYS, "", fail)

    vault_id = raw.get("vault_id")
    if vault_id is not None and (
        not isinstance(vault_id, str) or not _VAULT_ID_RE.fullmatch(vault_id)
    ):
        raise fail(
            "vault_id", f"{vault_id!r}: 1-64 letters, digits, '.', '_' or '-' (init writes one)"
        )
    state_setting = raw.get("state_dir")
    if state_setting is not None and (
        not isinstance(state_setting, str) or not state_setting.strip() or "\x00" in state_setting
    ):
        raise fail("state_dir", f"must be a folder path (~ allowed), got {state_setting!r}")

    managed_raw = raw.get("managed_folder", DEFAULT_MANAGED_FOLDER)
    managed = _folder(managed_raw, "managed_folder", fail)
    if managed == "":
        raise fail("managed_folder", "must name a folder inside the vault, not the whole vault")

    max_bytes = raw.get("max_note_bytes", DEFAULT_MAX_NOTE_BYTES)
    if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or max_bytes <= 0:
        raise fail("max_note_bytes", f"must be a positive integer (bytes), got {max_bytes!r}")

    exclude = _exclude(raw.get("exclude", []), fail)

    search = raw.get("search", {})
    if not isinstance(search, dict):
        raise fail("search", "must be a table ([search])")
    _reject_unknown(search, _SEARCH_KEYS, "search.", fail)
    k1 = _number(search.get("k1", DEFAULT_BM25_K1), "search.k1", fail)
    if k1 < 0:
        raise fail("search.k1", f"must be >= 0, got {k1}")
    b = _number(search.get("b", DEFAULT_BM25_B), "search.b", fail)
    if not 0 <= b <= 1:
        raise fail("search.b", f"must be between 0 and 1, got {b}")
    language = search.get("language", DEFAULT_SEARCH_LANGUAGE)
    if language not in SEARCH_LANGUAGES:
        raise fail(
            "search.language", f"must be one of {', '.join(SEARCH_LANGUAGES)}, got {language!r}"
        )
    semantic = search.get("semantic", False)
    if not isinstance(semantic, bool):
        raise fail("search.semantic", f"must be true or false, got {semantic!r}")

    mappings = _mappings(root, raw.get("mappings", []), fail)
    if not any(_is_within(managed, m.folder) for m in mappings):
        folders = ", ".join(repr(m.folder) for m in mappings)
        raise fail(
            "managed_folder",
            f"{managed!r} lies in no mapped folder (mapped: {folders}); "
            "map it, or a folder that contains it",
        )

    secrets = _secret_patterns(raw.get("secrets", {}), fail)
    return Config(
        root=root,
        managed_folder=managed,
        mappings=mappings,
        exclude=exclude + obsidian_exclude,
        max_note_bytes=max_bytes,
        bm25_k1=k1,
        bm25_b=b,
        search_language=language,
        semantic=semantic,
        secret_patterns=secrets,
        obsidian_exclude=obsidian_exclude,
        vault_id=vault_id,
        state_base=state_base(root, state_setting, environ),
        state_base_setting=state_setting,
    )


def _reject_unknown(
    table: Mapping[str, object], allowed: Sequence[str], prefix: str, fail: _Fail
) -> None:
    for key in table:
        if key not in allowed:
            import difflib  # only to suggest a spelling

            close = difflib.get_close_matches(key, allowed, n=1)
            guess = f" (did you mean {close[0]!r}?)" if close else ""
            raise fail(f"{prefix}{key}", f"unknown key{guess}; allowed: {', '.join(allowed)}")


def _folder(value: object, key: str, fail: _Fail) -> str:
    """A vault-relative POSIX folder: "" for the whole vault; one trailing "/" is tolerated."""
    if not isinstance(value, str):
        raise fail(key, f"must be a string (a vault-relative folder), got {value!r}")
    folder = value[:-1] if value.endswith("/") and value != "/" else value
    if folder == "":
        return ""
    if folder.startswith("/") or re.match(r"^[A-Za-z]:", folder):
        raise fail(key, f"{value!r} is absolute; write a path relative to the vault root")
    if "\\" in folder or "\x00" in folder:
        raise fail(key, f"{value!r}: use '/' between folders (no backslashes)")
    for part in folder.split("/"):
        if part in ("", ".", ".."):
            raise fail(key, f"{value!r}: empty, '.' and '..' segments are not allowed")
        if part.startswith("."):
            # The scanner never enters hidden folders (Obsidian does not show them either).
            raise fail(key, f"{value!r}: hidden folders (starting with '.') are never scanned")
    return folder


def _exclude(value: object, fail: _Fail) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise fail("exclude", f"must be a list of strings (globs or /regex/), got {value!r}")
    out: list[str] = []
    for i, item in enumerate(value):
        key = f"exclude[{i}]"
        if not isinstance(item, str) or item.strip() == "":
            raise fail(key, f"must be a non-empty string (a glob or /regex/), got {item!r}")
        if len(item) > 2 and item.startswith("/") and item.endswith("/"):
            try:
                re.compile(item[1:-1])
            except re.error as exc:
                raise fail(key, f"{item!r} is not a valid regular expression: {exc}") from exc
        out.append(item)
    return tuple(out)


def _number(value: object, key: str, fail: _Fail) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise fail(key, f"must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise fail(key, f"must be finite, got {value!r}")
    return number


def _mappings(root: Path, value: object, fail: _Fail) -> tuple[FolderMapping, ...]:
    if not isinstance(value, list):
        raise fail("mappings", "must be an array of tables ([[mappings]])")
    if not value:
        # An unconfigured vault is one project named after its folder.
        return (FolderMapping("", "project", _slug(root.name)),)
    out: list[FolderMapping] = []
    for i, item in enumerate(value):
        key = f"mappings[{i}]"
        if not isinstance(item, dict):
            raise fail(key, "must be a table with folder, scope and scope_id")
        _reject_unknown(item, _MAPPING_KEYS, f"{key}.", fail)
        if "folder" not in item:
            raise fail(f"{key}.folder", "is required ('' maps the whole vault)")
        folder = _folder(item["folder"], f"{key}.folder", fail)
        scope_raw = item.get("scope")
        if scope_raw not in SCOPES:
            raise fail(
                f"{key}.scope", f"{scope_raw!r} is not a scope; allowed: {', '.join(SCOPES)}"
            )
        scope = cast(Scope, scope_raw)
        scope_id = _scope_id(root, folder, scope, item.get("scope_id"), f"{key}.scope_id", fail)
        for j, other in enumerate(out):
            if other.folder == folder:
                raise fail(f"{key}.folder", f"{folder!r} is already mapped by mappings[{j}]")
            if _is_within(folder, other.folder) or _is_within(other.folder, folder):
                raise fail(
                    f"{key}.folder",
                    f"{folder!r} overlaps {other.folder!r} (mappings[{j}]); "
                    "mapped folders must not contain one another",
                )
        out.append(FolderMapping(folder, scope, scope_id))
    return tuple(out)


def _scope_id(
    root: Path, folder: str, scope: Scope, value: object, key: str, fail: _Fail
) -> str | None:
    if value is None:
        if scope in _SCOPES_NEEDING_ID:
            raise fail(key, f"is required for scope {scope!r}")
        if scope == "project":
            return _slug(folder.rsplit("/", 1)[-1] if folder else root.name)
        return None
    if scope in _SCOPES_WITHOUT_ID:
        raise fail(key, f"must be absent for scope {scope!r} (it has a single shared instance)")
    if not isinstance(value, str) or not _SCOPE_ID_RE.fullmatch(value):
        raise fail(
            key,
            f"{value!r} is not a valid scope id: 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit",
        )
    return value


def _slug(name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:64].strip("-")
    return slug or "vault"


def _secret_patterns(value: object, fail: _Fail) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict):
        raise fail("secrets", "must be a table ([secrets])")
    _reject_unknown(value, _SECRETS_KEYS, "secrets.", fail)
    patterns = value.get("patterns", [])
    if not isinstance(patterns, list):
        raise fail("secrets.patterns", "must be an array of tables ([[secrets.patterns]])")
    out: list[tuple[str, str]] = []
    for i, item in enumerate(patterns):
        key = f"secrets.patterns[{i}]"
        if not isinstance(item, dict):
            raise fail(key, "must be a table with name and regex")
        _reject_unknown(item, _PATTERN_KEYS, f"{key}.", fail)
        name, regex = item.get("name"), item.get("regex")
        if not isinstance(name, str) or not _PATTERN_NAME_RE.fullmatch(name):
            raise fail(
                f"{key}.name",
                f"is required: lower-case letters, digits and hyphens (got {name!r}); "
                "it is shown in [redacted:<name>] markers",
            )
        if any(name == seen for seen, _ in out):
            raise fail(f"{key}.name", f"{name!r} is defined twice")
        if not isinstance(regex, str) or regex == "":
            raise fail(f"{key}.regex", "is required: a non-empty regular expression")
        try:
            compiled = re.compile(regex)
        except re.error as exc:
            raise fail(f"{key}.regex", f"not a valid regular expression: {exc}") from exc
        if compiled.match("") is not None:
            raise fail(f"{key}.regex", f"{regex!r} matches the empty string")
        out.append((name, regex))
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# Writing


def rows_digest(config: Config) -> str:
    """A digest of what shapes the index's rows besides the code's versions: the mappings,
    managed folder, exclusions and size cap, and the secret patterns (configured and built-in)
    that redacted them. The index records it as `config_digest`; any difference means rebuild.
    """
    from vaultmem.core.secrets import builtin_digest

    shape = json.dumps(
        [
            [[m.folder, m.scope, m.scope_id] for m in config.mappings],
            config.managed_folder,
            list(config.exclude),
            config.max_note_bytes,
            [list(pair) for pair in config.secret_patterns],  # rows are redacted by them
            builtin_digest(),  # and by these
        ]
    )
    return blake2b(shape.encode(), digest_size=8).hexdigest()


def render_config(config: Config) -> str:
    """The TOML text of `config` (without Obsidian's exclusions, which live in Obsidian's file).
    `init` writes the whole file (it never edits one in place), so tomli-w renders it."""
    import tomli_w

    search: dict[str, object] = {"k1": float(config.bm25_k1), "b": float(config.bm25_b)}
    if config.semantic:
        search["semantic"] = True
    if config.search_language != DEFAULT_SEARCH_LANGUAGE:
        search["language"] = config.search_language
    raw: dict[str, object] = {
        **({"vault_id": config.vault_id} if config.vault_id else {}),
        **({"state_dir": config.state_base_setting} if config.state_base_setting else {}),
        "managed_folder": config.managed_folder,
        "max_note_bytes": config.max_note_bytes,
        "exclude": list(config.config_exclude),
        "mappings": [
            {"folder": m.folder, "scope": m.scope}
            | ({} if m.scope_id is None else {"scope_id": m.scope_id})
            for m in config.mappings
        ],
        "search": search,
    }
    if config.secret_patterns:
        raw["secrets"] = {
            "patterns": [{"name": name, "regex": regex} for name, regex in config.secret_patterns]
        }
    if not config.mappings:
        del raw["mappings"]
    header = "# vaultmem configuration. Keys and defaults: docs/configuration.md\n"
    return header + tomli_w.dumps(raw)


def parse_mapping(spec: str) -> FolderMapping:
    """`FOLDER=SCOPE[:SCOPE_ID]` (init's `--map`) as a mapping; `=project` maps the whole vault."""
    folder, sep, rest = spec.partition("=")
    scope, _, scope_id = rest.partition(":")
    if not sep or scope not in SCOPES or (not folder.strip("/") and folder != ""):
        raise InvalidArgumentError(
            f"--map {spec!r} is not FOLDER=SCOPE[:SCOPE_ID].",
            hint=f"SCOPE is one of {', '.join(SCOPES)}; e.g. --map Projects=project:atlas",
        )
    return FolderMapping(folder.strip("/"), scope, scope_id or None)


def complete_mappings(
    root: Path, managed_folder: str, mappings: Sequence[FolderMapping]
) -> tuple[list[FolderMapping], list[str]]:
    """The mappings `init` writes, and the warnings a person should read: the managed folder is
    mapped as a project when no mapping covers it (else its topics would be in no scope), and a
    mapped folder that does not exist is a warning, not a silent no-op."""
    managed = managed_folder.strip("/")
    complete = list(mappings)
    warnings = []
    covered = any(m.folder == "" or (managed + "/").startswith(m.folder + "/") for m in complete)
    if complete and not covered:
        complete.append(FolderMapping(managed, "project", None))
        warnings.append(
            f"The managed folder {managed}/ is in no mapped folder: mapped it as project "
            f"(to choose: --map {managed}=SCOPE[:SCOPE_ID])."
        )
    for m in complete:
        if m.folder and m.folder != managed and not (root / m.folder).is_dir():
            warnings.append(f"The mapped folder {m.folder}/ does not exist in {root.resolve()}.")
    return complete, warnings


def init_vault(
    root: Path,
    *,
    managed_folder: str = DEFAULT_MANAGED_FOLDER,
    mappings: Sequence[FolderMapping] = (),
    force: bool = False,
) -> Config:
    """Write `.vaultmem/config.toml` (atomically) and create the managed folder.

    With no mappings the whole vault becomes one project; its scope id is written out so that
    renaming the vault folder later does not move every topic to another scope. A new vault id
    is written too (an existing config's id and `state_dir` are kept by --force).
    """
    root = _existing_folder(Path(root), "the vault root")
    path = root / CONFIG_DIR_NAME / CONFIG_FILE_NAME
    if path.exists() and not force:
        raise ConfigError(
            f"{path} already exists", hint="Edit it by hand, or re-run init with --force."
        )
    kept = _kept_keys(path)
    raw: dict[str, object] = {
        **kept,
        "vault_id": kept.get("vault_id") or new_vault_id(),
        "managed_folder": managed_folder,
        "mappings": [
            {"folder": m.folder, "scope": m.scope}
            | ({} if m.scope_id is None else {"scope_id": m.scope_id})
            for m in mappings
        ],
    }
    config = _validate(root, path, raw, ())
    try:
        _write_atomically(path, render_config(config))
        (root / config.managed_folder).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write: {exc.strerror or exc}") from exc
    return load_config(root)


def new_vault_id() -> str:
    """A fresh random vault id (128 bits, hex)."""
    return os.urandom(16).hex()


def _kept_keys(path: Path) -> dict[str, object]:
    """`vault_id` and `state_dir` of an existing config (re-init keeps the vault's identity)."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: raw[k] for k in ("vault_id", "state_dir") if isinstance(raw.get(k), str)}


def ensure_vault_id(config: Config) -> Config:
    """The config with a vault id, writing a new one into the config file when it has none.

    The line goes first in the file (TOML keys before any table), the rest of the file stays
    byte for byte: a vault configured by hand keeps its comments. A vault without a config
    file gets one holding just the id (every other key keeps its default)."""
    if config.vault_id:
        return config
    path = config.config_path
    try:
        old = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        old = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from exc
    import tomli_w

    vault_id = new_vault_id()
    try:
        _write_atomically(
            path, f"{tomli_w.dumps({'vault_id': vault_id})}{old.removeprefix(chr(0xFEFF))}"
        )
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write: {exc.strerror or exc}") from exc
    return load_config(config.root)


def _write_atomically(path: Path, text: str) -> None:
    """Temp file in the same folder, fsync, rename over, fsync the folder: never a torn file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_file(path, text.encode("utf-8"))
