"""Secret detection and redaction: the credential shapes vaultmem knows and how they are cut.

This module owns the built-in secret patterns, the `[redacted:<name>]` marker and the pure
functions `redact`, `find_secrets` and `compile_patterns`. It does no I/O. Policy (reject a
`global` write, skip a topic on export) belongs to the memory module; this one only answers
"what is secret here" and "what does the text look like without it". Reports carry pattern names
only, never the matched bytes, so a `Redaction` or a `SecretError` built from one is safe to log.

Callers must redact before any length cut: a token cut in half no longer matches its pattern, so
clipping first would let its prefix slip through unredacted.

Patterns run in order on the text left by the ones before, so the most specific name wins
(`sk-ant-` is reported as `anthropic-key`, not `openai-key`; `API_TOKEN=ghp_...` as
`github-token`). Every pattern refuses to start a value at `[`, and no match touching an existing
marker is replaced, which is what makes `redact` idempotent. Regexes are kept linear: each
starts at a literal prefix or keyword with a left guard, look-aheads are bounded, and runs are
possessive or end at a character they cannot hold, so no match attempt rescans the text. A
token longer than usual is redacted whole rather than leaving its tail behind.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import html
import json
import re
import unicodedata
from collections.abc import Iterable, Sequence
from hashlib import blake2b
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar, cast

from vaultmem.core.errors import ConfigError

if TYPE_CHECKING:  # a search redacts and cuts stored text, never a parsed note
    from vaultmem.core.note_model import Note

_T = TypeVar("_T")

__all__ = [
    "BUILTIN_PATTERNS",
    "Redaction",
    "SecretPattern",
    "builtin_digest",
    "compile_patterns",
    "find_secrets",
    "marker",
    "may_change",
    "may_hold_secrets",
    "reader_view",
    "redact",
    "redact_note",
    "redact_value",
    "secret_names",
]


# Named tuples, not dataclasses: the scan of every reconcile imports this module, and a
# dataclass compiles its methods at import (tests/integration/test_coldstart.py).
class SecretPattern(NamedTuple):
    """A named secret shape. When `regex` has groups named `secret` or `secret_*`, only the
    groups that took part in a match are replaced (the key or URL around them is kept);
    otherwise the whole match is."""

    name: str
    regex: re.Pattern[str]


class Redaction(NamedTuple):
    """Text with every secret replaced by a marker, and the names of the patterns that fired
    (sorted, unique). `found` never holds the matched bytes."""

    text: str
    found: tuple[str, ...]


_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
_MARKER = re.compile(r"\[redacted:[a-z0-9][a-z0-9-]{0,63}\]")


def marker(name: str) -> str:
    """The text that stands where a secret matched by pattern `name` was."""
    return f"[redacted:{name}]"


# --- building blocks -------------------------------------------------------------------------

# A token character must not sit just before a provider prefix, so `task-list` holds no `sk-`.
_LEFT = r"(?<![A-Za-z0-9_-])"

# One character of an unquoted assignment value: stops at whitespace, quotes, brackets and the
# separators of argument lists and YAML flow maps. `&` also ends a `KEY=value` value (query
# strings) but not a `key: value` one, where it is more likely part of a password.
_UNQ = r"""[^\s"'`,;&()\[\]{}<>|]"""
_UNQ_AMP = r"""[^\s"'`,;()\[\]{}<>|]"""

# An unquoted value character that is not a digit or symbol; a possessive run of it reaches the
# first digit or symbol without backtracking.
_PLAIN = r"""[^\s"'`,;()\[\]{}<>|0-9@#$%^&*+=~]"""

# Values that are not secrets: placeholders ($VAR, ${VAR}, <your-key>, {{ var }}, %(x)s, ***),
# paths, YAML indicators (| > ! ~ # &), operators (==, =>), already-redacted markers, type hints
# and literals (`password: str`, `token = None`), attribute chains (`settings.API_KEY`) and the
# key's own name (`f(token=token)`).
_TYPE_WORDS = (
    r"(?i:str|bytes|int|float|bool|none|null|nil|true|false|undefined|string|secretstr"
    r"|secretbytes|optional|any|object|required|dict|list)"
)
_NOT_VALUE = (
    r"(?![$<{*%!|>=\[(&@#~/.]"
    rf"|{_TYPE_WORDS}(?!{_UNQ})"
    rf"|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?!{_UNQ})"
    rf"|(?P=kw)(?!{_UNQ}))"
)

# Between key and separator: a JSON key's closing quote or Markdown bold (`**Password**: x`).
_GAP = r"""["'*]{0,2}+[ \t]*+[:=][ \t]*+(?:\*\*[ \t]*+)?"""

# A quoted value may hold spaces and ends at its closing quote or, if unclosed, the line end. It
# must not start with a space, comma or bracket, so a closing quote never opens a value
# (`input('Password: ')`, `print('token: ', x)`), and it never runs across a marker, so
# `"Bearer [redacted:jwt]"` is left as it is. Unbounded is safe: the scan stops at the next
# quote or newline, and only a marker makes it fail.
_QUOTE_START = r"(?![$<{*%\s,;)\]}]|\[redacted:)"
_QUOTED = (
    rf'"(?P<secret_dq>{_QUOTE_START}(?:(?!\[redacted:)[^"\n])++)(?=["\n]|\Z)'
    rf"|'(?P<secret_sq>{_QUOTE_START}(?:(?!\[redacted:)[^'\n])++)(?=['\n]|\Z)"
)

# The assignment value, three ways:
# 1. `KEY=value` with nothing around `=` is .env, shell, CLI-flag or query-string style: any
#    value counts, unless it is a call, a subscript or the last argument of one.
# 2. a quoted value (JSON, YAML, code) counts unless it is a placeholder.
# 3. an unquoted value after `:` or a spaced `=` may be prose ("Token: use the app") or code, so
#    it counts only when it holds a digit or symbol, or is the last word on its line.
# The code check sits after the first 256 characters and the rest of a longer value is taken
# without a check: a long value is redacted whole, yet no keyword re-scans the text to its end.
_VALUE = (
    rf"(?:=(?P<secret_env>{_NOT_VALUE}{_UNQ}{{1,256}}+(?![(\[)]){_UNQ}*+)"
    rf"|{_GAP}(?:{_QUOTED}"
    rf"|(?P<secret_u>{_NOT_VALUE}"
    rf"(?:(?={_PLAIN}{{0,255}}+[0-9@#$%^&*+=~])|(?={_UNQ_AMP}{{1,256}}+[ \t]*+(?:\r?\n|\Z)))"
    rf"{_UNQ_AMP}{{1,256}}+(?![(\[]){_UNQ_AMP}*+)))"
)


def _assignment(keywords: str) -> str:
    # The match starts at the keyword, not the whole key, so `DB_PASSWORD`, `PGPASSWORD` and
    # `dbPassword` all match without a variable-length prefix to backtrack over; the keyword
    # must end the key (`password_hash =` and `max_tokens:` do not match).
    return rf"(?P<kw>(?i:{keywords})){_VALUE}"


class _Deferred:
    """A built-in pattern's regex, compiled when first used: compiling all of them costs ~40 ms,
    and most commands only look for the triggers (`may_hold_secrets`), which need none."""

    __slots__ = ("_compiled", "_source")

    def __init__(self, source: str) -> None:
        self._source = source
        self._compiled: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = re.compile(self._source)
        return getattr(compiled, name)


def _pattern(name: str, regex: str) -> SecretPattern:
    return SecretPattern(name, cast("re.Pattern[str]", _Deferred(regex)))


BUILTIN_PATTERNS: tuple[SecretPattern, ...] = (
    # Whole PEM block. The body is base64, `\n` escapes (JSON), and Proc-Type/DEK-Info headers;
    # an unfinished block (no END line) is redacted through its body.
    _pattern(
        "private-key",
        r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[A-Za-z0-9+/=\s\\:,]|-(?!----))*+"
        r"(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----)?",
    ),
    # Before openai-key: both start `sk-`.
    _pattern("anthropic-key", _LEFT + r"sk-ant-[A-Za-z0-9_-]{20,}"),
    # Random keys mix upper case and digits; requiring both keeps kebab-case words out.
    _pattern(
        "openai-key",
        _LEFT + r"sk-(?:proj-|svcacct-|admin-)?"
        r"(?=[A-Za-z0-9_-]{0,511}[0-9])(?=[A-Za-z0-9_-]{0,511}[A-Z])[A-Za-z0-9_-]{20,}",
    ),
    _pattern(
        "github-token",
        r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
    ),
    _pattern("gitlab-token", _LEFT + r"glpat-[A-Za-z0-9_-]{20,}"),
    _pattern("huggingface-token", r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}+"),
    _pattern("sendgrid-key", r"(?<![A-Za-z0-9_])SG\.[A-Za-z0-9_-]{16,}+\.[A-Za-z0-9_-]{16,}+"),
    _pattern("digitalocean-token", r"(?<![A-Za-z0-9_])do[por]_v1_[a-f0-9]{64}"),
    # Azure connection strings: keep `AccountKey=` so the string still says what it held.
    _pattern(
        "azure-key",
        r"(?i:\b(?:AccountKey|SharedAccessKey|SharedAccessSignature)=)"
        r"(?P<secret>[A-Za-z0-9+/%&=:._-]{20,}+)",
    ),
    _pattern("npm-token", r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36,}"),
    # Keep the host so the note still says which integration it was.
    _pattern(
        "slack-webhook",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/"
        r"(?P<secret>[A-Za-z0-9_/-]{20,})",
    ),
    _pattern("slack-token", _LEFT + r"xox[baprs]-[A-Za-z0-9-]{10,}"),
    _pattern("google-api-key", _LEFT + r"AIza[A-Za-z0-9_-]{35}"),
    _pattern(
        "stripe-key",
        r"(?<![A-Za-z0-9_])(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,})",
    ),
    # The AWS console's credentials CSV: `AKIA…,<40-character secret>`, the pair replaced whole;
    # before the bare id, which would hide the pair (a 40-character string alone is any base64).
    _pattern(
        "aws-credentials-csv",
        r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}[ \t]*+[,;\t|][ \t]*+"
        r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])",
    ),
    _pattern("aws-access-key-id", r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
    # Before bearer-token, so `Bearer eyJ...` is reported as the more specific `jwt`.
    _pattern(
        "jwt",
        _LEFT + r"eyJ[A-Za-z0-9_-]{8,}+\.eyJ[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{16,}+",
    ),
    # A 40-character AWS secret only counts after its key; alone it is any base64 string.
    _pattern(
        "aws-secret-access-key",
        r"(?i:aws_?secret_?(?:access_?)?key)"
        r"""["']?[ \t]*[:=][ \t]*["']?(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])""",
    ),
    # Keep scheme, user and host; a placeholder password (`${PGPASS}`, `****`) is left alone.
    _pattern(
        "url-password",
        r"://[^\s:/?#@\[\]]{0,256}:(?P<secret>(?![$<{*])[^\s/?#@\[\]]{1,256})@",
    ),
    # "bearer tokens are used" is prose: a token is at least 16 characters and holds a digit.
    _pattern(
        "bearer-token",
        r"(?i:\bbearer)[ \t]++(?P<secret>(?=[A-Za-z0-9._~+/-]{0,511}[0-9])"
        r"[A-Za-z0-9._~+/-]{16,}+=*)",
    ),
    _pattern(
        "basic-auth",
        r"(?i:\bauthorization)[ \t]*:[ \t]*(?i:basic)[ \t]+"
        r"(?P<secret>[A-Za-z0-9+/]{8,}+={0,2})",
    ),
    # Passwords on a command line: `docker login -p X` / `--password X`, `mysql -pX` (with no
    # space: `-p X` makes mysql prompt, and X is the database). Bounded look-back on one line.
    _pattern(
        "cli-password",
        r"(?i:\b(?:docker|podman|helm|oras)[ \t]++(?:registry[ \t]++)?login\b)"
        r"[^\n]{0,200}?[ \t](?:-p|--password)(?:[ \t]++|=)"
        r"(?P<secret>(?![-$<{*])[^\s\"'`]{1,256}+)"
        r"|(?i:\bmysql(?:dump|admin|sh)?\b)[^\n]{0,200}?[ \t]-p"
        r"(?P<secret_my>(?![$<{*])[^\s\"'`]{1,256}+)",
    ),
    # ~/.pgpass: `host:port:database:user:password`, one entry a line.
    _pattern(
        "pgpass-line",
        r"(?m:^[^\s:#][^\s:]{0,253}:(?:[0-9]{1,5}|\*):[^\s:]{1,255}:[^\s:]{1,255}:"
        r"(?P<secret>(?![$<{*])[^\s]{1,256}+)$)",
    ),
    # Prose: "the password is X" / "password was `X`"; an unquoted X must hold a digit or symbol,
    # so "the password is changed monthly" stays.
    _pattern(
        "password-prose",
        r"(?i:\b(?:password|passphrase|passcode|passwd)[ \t]++(?:is|was|will[ \t]++be)[ \t:]++)"
        r"(?:[\"'`](?P<secret_q>(?![$<{*\s])[^\"'`\n]{1,256}+)[\"'`]"
        r"|(?P<secret>(?![$<{*\[])(?=[^\s\"'`]{0,255}?[0-9@#$%^&*+=~!?])"
        r"[^\s\"'`]{3,255}?[^\s\"'`.,;:!?)\]](?=[.,;:!?)\]]*(?:\s|$))))",
    ),
    _pattern("password-assignment", _assignment(r"password|passwd|passphrase|(?<![A-Za-z])pass")),
    _pattern(
        "secret-assignment",
        _assignment(r"secret(?:[_-]?access)?(?:[_-]?key)?|private[_-]?key|credentials?"),
    ),
    _pattern("api-key-assignment", _assignment(r"api[_-]?key|access[_-]?key")),
    _pattern("token-assignment", _assignment(r"token")),
)


def builtin_digest() -> str:
    """A digest of the built-in patterns and their triggers: the index records it (in its
    `config_digest`), so rows redacted by other patterns are rebuilt, and a search trusts only
    an index redacted by these (`Vault.search`)."""
    global _DIGEST
    if _DIGEST is None:
        sources = [
            [p.name, getattr(p.regex, "_source", None) or p.regex.pattern] for p in BUILTIN_PATTERNS
        ]
        refined = sorted(_REFINED_SOURCES.items()), sorted(_REFINED_TEXT_SOURCES.items())
        shape = json.dumps([sources, sorted(_TRIGGERS.items()), *refined])
        _DIGEST = blake2b(shape.encode(), digest_size=8).hexdigest()
    return _DIGEST


_DIGEST: str | None = None


# --- redaction -------------------------------------------------------------------------------


def _secret_groups(regex: re.Pattern[str]) -> tuple[str, ...]:
    return tuple(g for g in regex.groupindex if g == "secret" or g.startswith("secret_"))


def _apply(pattern: SecretPattern, text: str) -> tuple[str, bool]:
    """Replace each match of one pattern; report whether any was replaced."""
    if not pattern.regex.search(text):
        return text, False
    # Markers from earlier patterns are off limits: an extra pattern such as `[a-z]+` must not
    # eat `redacted` inside one, or a second pass would change the text.
    markers = [m.span() for m in _MARKER.finditer(text)]
    groups = _secret_groups(pattern.regex)
    replacement = marker(pattern.name)
    hit = False

    def substitute(m: re.Match[str]) -> str:
        nonlocal hit
        spans = [m.span(g) for g in groups if m.start(g) != -1 and m.end(g) > m.start(g)]
        if not groups:
            spans = [m.span()] if m.end() > m.start() else []
        if not spans or any(s < me and ms < e for s, e in spans for ms, me in markers):
            return m.group(0)
        hit = True
        out: list[str] = []
        pos = m.start()
        for start, end in sorted(spans):
            out.append(text[pos:start])
            out.append(replacement)
            pos = end
        out.append(text[pos : m.end()])
        return "".join(out)

    new = pattern.regex.sub(substitute, text)
    return new, hit


# What a built-in pattern cannot match without, by pattern name: words its
# case-insensitive `(?i:...)` part holds (looked for in the folded text) and literals its
# case-sensitive part holds. Most text holds none, so most patterns are never run on it
# (search redacts ~40 texts a query: running all 28 regexes on each was a third of a warm
# search). A trigger must be implied by every match; tests/core/test_secrets.py checks each
# pattern's examples against its trigger. A pattern without an entry always runs.
_TRIGGERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "private-key": ((), ("-----BEGIN",)),
    "anthropic-key": ((), ("sk-",)),
    "openai-key": ((), ("sk-",)),
    "github-token": ((), ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    "gitlab-token": ((), ("glpat-",)),
    "huggingface-token": ((), ("hf_",)),
    "sendgrid-key": ((), ("SG.",)),
    "digitalocean-token": ((), ("_v1_",)),
    "azure-key": (("accountkey", "sharedaccess"), ()),
    "npm-token": ((), ("npm_",)),
    "slack-webhook": ((), ("hooks.slack.com/",)),
    "slack-token": ((), ("xox",)),
    "google-api-key": ((), ("AIza",)),
    "stripe-key": ((), ("_live_", "_test_", "whsec_")),
    "aws-credentials-csv": ((), ("AKIA", "ASIA")),
    "aws-access-key-id": ((), ("AKIA", "ASIA")),
    "jwt": ((), ("eyJ",)),
    "aws-secret-access-key": (("secret",), ()),
    "url-password": ((), ("://",)),
    "bearer-token": (("bearer",), ()),
    "basic-auth": (("authorization",), ()),
    "cli-password": (("login", "mysql"), ()),
    "password-prose": (("pass",), ()),
    "password-assignment": (("pass",), ()),
    "secret-assignment": (("secret", "private", "credential"), ()),
    "api-key-assignment": (("api", "access"), ()),
    "token-assignment": (("token",), ()),
}
# pgpass-line's own trigger: the `:port:database:user:` every such line holds. A bare
# `:port:` would fire on every time of day (`13:57:00`), which half of a vault's frontmatter
# holds, and send each such note through a redaction of every text it has.
_PGPASS_TRIGGER = re.compile(r":(?:[0-9]{1,5}|\*):[^\s:]{1,255}:[^\s:]{1,255}:")
_UNTRIGGERED = any(
    p.name not in _TRIGGERS and p.name != "pgpass-line" for p in BUILTIN_PATTERNS
)  # a pattern without a trigger makes every text worth a full pass
# Keywords are common words ("token", "secret" in prose): a keyword pattern runs only where its
# keyword is followed by what the pattern needs next, looked for in the folded text (the
# characters between keep their case). Assignments need `:` or `=` after optional quotes,
# stars and blanks (both ways `_VALUE` starts).
_THEN_ASSIGN = r"""["'*]{0,2}[ \t]*[:=]"""
_REFINED_SOURCES: dict[str, str] = {
    "azure-key": r"(?:accountkey|sharedaccesskey|sharedaccesssignature)=",
    "aws-secret-access-key": r"aws_?secret_?(?:access_?)?key[\"']?[ \t]*[:=]",
    "bearer-token": r"bearer[ \t]",
    "basic-auth": r"authorization[ \t]*:",
    "password-prose": r"pass(?:word|phrase|code|wd)[ \t]+(?:is|was|will)",
    "password-assignment": r"pass" + _THEN_ASSIGN + r"|pass(?:word|wd|phrase)" + _THEN_ASSIGN,
    "secret-assignment": r"(?:secret(?:[_-]?access)?(?:[_-]?key)?|private[_-]?key"
    r"|credentials?)" + _THEN_ASSIGN,
    "api-key-assignment": r"(?:api|access)[_-]?key" + _THEN_ASSIGN,
    "token-assignment": r"token" + _THEN_ASSIGN,
    # A URL's `user:password@`: "://" alone is in every link, and it sent each note holding a
    # URL through a redaction of every text it has (most of a build's redaction on a vault of
    # linked notes). The pattern itself without its placeholder look-ahead; the classes hold
    # no letter, so the folded text finds what the text does.
    "url-password": r"://[^\s:/?#@\[\]]{0,256}:[^\s/?#@\[\]]{1,256}@",
}
# The same for literal triggers, looked for in the text as written (a look-behind at a letter
# cannot be judged in the folded text, where `K` is `k`): `sk-` is in every `task-` and
# `desk-`, so a vault of kebab-case names sent its notes through a redaction of every text.
_REFINED_TEXT_SOURCES: dict[str, str] = {
    "anthropic-key": r"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{20}",
    "openai-key": r"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{20}",
}
_REFINED: dict[str, re.Pattern[str]] = {
    name: re.compile(regex) for name, regex in _REFINED_SOURCES.items()
}
_REFINED_TEXT: dict[str, re.Pattern[str]] = {
    name: re.compile(regex) for name, regex in _REFINED_TEXT_SOURCES.items()
}
# The only non-ASCII characters Python's `(?i)` matches to ASCII letters (İ ı ſ K): mapped to
# them before lower-casing, so a folded trigger is found wherever the regex could match.
_ASCII_FOLDS = {0x130: "i", 0x131: "i", 0x17F: "s", 0x212A: "k"}
_HAS_ASCII_FOLD = re.compile("[\u0130\u0131\u017f\u212a]")


_ANY_WORD = tuple(sorted({w for words, _ in _TRIGGERS.values() for w in words}))
_ANY_LITERAL = tuple(sorted({lit for _, literals in _TRIGGERS.values() for lit in literals}))


# Which built-in patterns each trigger word or literal lets run (`_candidates`).
_BY_WORD = {
    w: frozenset(name for name, (words, _) in _TRIGGERS.items() if w in words) for w in _ANY_WORD
}
_BY_LITERAL = {
    lit: frozenset(name for name, (_, literals) in _TRIGGERS.items() if lit in literals)
    for lit in _ANY_LITERAL
}


def _folded(text: str) -> str:
    # `translate` with a dict costs ~30 ns a character, as much as the rest of a no-trigger
    # check; a search snippet is never ASCII (its `…`) yet almost never holds one of the four.
    if text.isascii() or not _HAS_ASCII_FOLD.search(text):
        return text.lower()
    return text.translate(_ASCII_FOLDS).lower()


_Present = tuple[set[str], set[str]]


# Half the literals hold `_` (`ghp_`, `npm_`, `_live_`): a text without one (most prose: 94% of the
# first 3,000 obsidian-hub notes) holds none of them, so one look for `_` stands for twelve.
_UNDERSCORE_LITERALS = tuple(lit for lit in _ANY_LITERAL if "_" in lit)
_OTHER_LITERALS = tuple(lit for lit in _ANY_LITERAL if "_" not in lit)


def _present(text: str, folded: str) -> _Present:
    """The trigger words in the folded text and the trigger literals in the text."""
    literals = {lit for lit in _OTHER_LITERALS if lit in text}
    if "_" in text:
        literals.update(lit for lit in _UNDERSCORE_LITERALS if lit in text)
    return {w for w in _ANY_WORD if w in folded}, literals


def _candidates(present: _Present) -> frozenset[str]:
    """The names of the triggered patterns whose trigger is among `present`."""
    words, literals = present
    return frozenset().union(*(_BY_WORD[w] for w in words), *(_BY_LITERAL[x] for x in literals))


def _may_match(name: str, text: str, folded: str, candidates: frozenset[str] | None = None) -> bool:
    """False when the built-in pattern `name` cannot match `text` (its trigger is absent).
    `candidates` is `_candidates(_present(text, folded))`, computed once for all patterns."""
    if name == "pgpass-line":
        return bool(_PGPASS_TRIGGER.search(text))
    if name not in _TRIGGERS:
        return True
    if candidates is None:
        candidates = _candidates(_present(text, folded))
    if name not in candidates:
        return False
    refined = _REFINED.get(name)
    if refined is not None:
        return bool(refined.search(folded))
    refined = _REFINED_TEXT.get(name)
    return refined is None or bool(refined.search(text))


# --- the reader's view -----------------------------------------------------------------------

# Text is judged as a reader sees it: what does not show is dropped (every format character,
# Unicode category Cf: soft hyphen, zero-width space and joiners, bidi marks and embeddings,
# invisible operators, the Mongolian vowel separator, BOM; variation selectors; the combining
# grapheme joiner), compatibility forms are folded (NFKC: full-width `ｇｈｐ＿`), and Markdown
# backslash escapes and HTML character references are undone (`ghp\_…`, `ghp&#95;…`), since a
# renderer shows them as the character they stand for.
# Every Cf character of Unicode 14 (Python 3.11), the variation selectors and the other
# default-ignorable joiners, as ranges: deriving them from `unicodedata` at import would cost
# ~0.3 s a cold command. tests/core/test_secrets.py checks them against the running Python.
HIDDEN_RANGES: tuple[tuple[int, int], ...] = (
    (0xAD, 0xAD), (0x34F, 0x34F), (0x600, 0x605), (0x61C, 0x61C), (0x6DD, 0x6DD),
    (0x70F, 0x70F), (0x890, 0x891), (0x8E2, 0x8E2), (0x180B, 0x180F), (0x200B, 0x200F),
    (0x202A, 0x202E), (0x2060, 0x2064), (0x2066, 0x206F), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD), (0x13430, 0x13438),
    (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001), (0xE0020, 0xE007F),
    (0xE0100, 0xE01EF),
)  # fmt: skip
_HIDDEN = "".join(chr(c) for lo, hi in HIDDEN_RANGES for c in range(lo, hi + 1))
# The BMP ones as a class of single characters (a bitmap: ~9 ns a character); the astral ones
# only looked for when the text has an astral character at all. One class of every range
# cost ~50 ns a character, a tenth of a warm search.
_HAS_HIDDEN_BMP = re.compile("[" + re.escape("".join(c for c in _HIDDEN if c <= "\uffff")) + "]")
_HAS_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
# The astral ones as ranges: a class of ~200 single astral characters is a list the engine
# walks for each character (~0.35 ms a kilobyte, a fifth of a build's redaction on a vault
# with emoji), ranges are a few comparisons.
_HAS_HIDDEN_ASTRAL = re.compile(
    "["
    + "".join(
        re.escape(chr(lo)) + ("" if lo == hi else "-" + re.escape(chr(hi)))
        for lo, hi in HIDDEN_RANGES
        if lo > 0xFFFF
    )
    + "]"
)


class _Hidden:
    @staticmethod
    def search(text: str) -> bool:
        return bool(
            _HAS_HIDDEN_BMP.search(text)
            or (_HAS_ASTRAL.search(text) and _HAS_HIDDEN_ASTRAL.search(text))
        )

    @staticmethod
    def drop(text: str) -> str:
        """`text` without its hidden characters: two substitutions by the classes above, 3.5x
        faster than `str.translate` with a dict (~30 ns a character) on an emoji's text."""
        text = _HAS_HIDDEN_BMP.sub("", text)
        return _HAS_HIDDEN_ASTRAL.sub("", text) if _HAS_ASTRAL.search(text) else text


_HAS_HIDDEN = _Hidden
# CommonMark: a backslash before ASCII punctuation shows the punctuation.
_MD_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")
_HTML_REF = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});?")
# Emphasis inside a word (`pass**word**`, `to*ke*n`, `gh**p**_…`): a run of `*` between two
# word characters (letters, digits, `_`) opens or closes emphasis there, and a reader sees the
# word whole (`password`). An escaped star (`pass\*word`) is not a marker: a backslash, not a
# word character, stands before it. The pattern starts with the literal star so the search
# skips to each star (a leading look-behind is tried at every position: 15x slower).
_INTRAWORD_STARS = re.compile(r"\*(?<=\w\*)\**(?=\w)")


def reader_view(text: str) -> str:
    """`text` as a reader of the rendered Markdown sees it: hidden characters dropped, NFKC,
    emphasis markers inside a word, backslash escapes and HTML character references undone.
    The same object when nothing changes (an ASCII text without `\\`, `&` or `*`: four
    C-level looks)."""
    ascii_text = text.isascii()
    if ascii_text and "\\" not in text and "&" not in text and "*" not in text:
        return text
    view = text
    if not ascii_text:
        if _HAS_HIDDEN.search(view):
            view = _HAS_HIDDEN.drop(view)
        if not unicodedata.is_normalized("NFKC", view):
            view = unicodedata.normalize("NFKC", view)
            if _HAS_HIDDEN.search(view):  # NFKC can leave a format character behind
                view = _HAS_HIDDEN.drop(view)
    if "*" in view and _INTRAWORD_STARS.search(view):
        view = _INTRAWORD_STARS.sub("", view)
    if "\\" in view:
        view = _MD_ESCAPE.sub(r"\1", view)
    if "&" in view and _HTML_REF.search(view):
        view = html.unescape(view)
    return text if view == text else view


def redact(text: str, extra: Sequence[SecretPattern] = ()) -> Redaction:
    """Replace every secret in `text` with `[redacted:<name>]`, built-in patterns first.

    For assignments and URLs only the value is replaced (`DB_PASSWORD=[redacted:...]`).
    Redact before cutting text to a length limit. Redacting the result again changes nothing.
    A built-in pattern runs only when its trigger (`_TRIGGERS`) is in the text. Text is judged
    as a reader sees it (`reader_view`): when the reader's view holds a secret, it comes back
    redacted in that view (without the hidden characters and escapes); else as it was written.
    """
    view = reader_view(text)
    if view is not text:
        visible = _redact(view, extra)
        if visible.found:
            return visible
    return _redact(text, extra)


def _may_change(text: str, present: _Present, extra: Sequence[SecretPattern]) -> bool:
    """Whether any pattern could match `text` (`present` is `_present(text, ...)`): False is
    the fast path of `redact` and of `may_hold_secrets`, which must never disagree."""
    return bool(extra) or _UNTRIGGERED or any(present) or bool(_PGPASS_TRIGGER.search(text))


def _redact(text: str, extra: Sequence[SecretPattern]) -> Redaction:
    found: set[str] = set()
    folded = _folded(text)
    present = _present(text, folded)
    if not _may_change(text, present, extra):
        return Redaction(text, ())  # no pattern's trigger: the usual case
    candidates = _candidates(present)
    for pattern in BUILTIN_PATTERNS:
        name = pattern.name
        if name in _TRIGGERS and name not in candidates:
            continue  # `_may_match` says the same; most patterns stop here, without a call
        if not _may_match(name, text, folded, candidates):
            continue
        text, hit = _apply(pattern, text)
        if hit:
            found.add(pattern.name)
            folded = _folded(text)
            candidates = _candidates(_present(text, folded))
    for pattern in extra:
        text, hit = _apply(pattern, text)
        if hit:
            found.add(pattern.name)
    return Redaction(text=text, found=tuple(sorted(found)))


def may_hold_secrets(texts: Sequence[str], extra: Sequence[SecretPattern] = ()) -> bool:
    """False when `redact` leaves each of `texts` as it is, found by one look for the
    patterns' triggers over them all (a search hit's title, heading and snippet: three looks
    cost twice one). No trigger spans a line break, so joining them with one finds no more."""
    if extra or _UNTRIGGERED:
        return True
    joined = "\n".join(texts)
    if _may_change(joined, _present(joined, _folded(joined)), extra):
        return True
    view = reader_view(joined)  # what `redact` looks at as well
    return view is not joined and _may_change(view, _present(view, _folded(view)), extra)


def find_secrets(text: str, extra: Sequence[SecretPattern] = ()) -> tuple[str, ...]:
    """The names of the patterns that match `text` (sorted, unique), as `redact` reports them."""
    # Running the full redaction keeps the answer consistent with `redact`: a token inside an
    # assignment is reported once, under its most specific name.
    return redact(text, extra).found


def compile_patterns(pairs: Iterable[tuple[str, str]]) -> tuple[SecretPattern, ...]:
    """Compile `(name, regex)` pairs from `[[secrets.patterns]]` in the config.

    Raises `ConfigError` naming the pattern when its name is not lower-case kebab-case (it ends
    up inside a marker), its regex does not compile, or it matches the empty string.
    """
    patterns: list[SecretPattern] = []
    for name, source in pairs:
        if not _NAME.fullmatch(name):
            raise ConfigError(
                f"secrets.patterns: name {name!r} must be lower-case letters, digits and hyphens",
                hint='Rename the pattern in .vaultmem/config.toml, e.g. name = "internal-token".',
            )
        try:
            regex = re.compile(source)
        except re.error as exc:
            raise ConfigError(
                f"secrets.patterns: pattern {name!r} has an invalid regex: {exc}",
                hint="Fix the regex of that pattern in .vaultmem/config.toml.",
            ) from exc
        # An empty match would put a marker between every two characters.
        if regex.fullmatch(""):
            raise ConfigError(
                f"secrets.patterns: pattern {name!r} matches the empty string",
                hint="Make the regex require at least one character (use + or {n,}, not *).",
            )
        patterns.append(SecretPattern(name, regex))
    return tuple(patterns)


# --- structures: a result on its way out, a note on its way into the index --------------------


def _strings(value: object, key: str, out: list[str], depth: int = 0) -> None:
    """Every text `redact_value` would judge in `value`, appended to `out` (a value under a
    key also as `key: value`, as a note holds it). Dispatched on the exact type first: a
    note is ~130 values, each build's worker walks every note, and the chain of `isinstance`
    checks was most of the walk's cost."""
    kind = type(value)
    if kind is str:
        out.append(f"{key}: {value}" if key and _keyed(key) else cast(str, value))
    elif (kind is tuple or kind is list) and depth <= 64:
        for v in cast("Sequence[object]", value):
            _strings(v, key, out, depth + 1)
    elif value is None or kind is bool or kind is int or kind is float:
        if key and value is not None and _keyed(key):
            out.append(f"{key}: {value}")
    elif kind in _KEYED_FIELDS and depth <= 64:
        # a known dataclass: its text and empty fields here, without a call each (a note's
        # links and headings are most of its values)
        for name, keyed in _KEYED_FIELDS[kind]:
            v = getattr(value, name, None)
            if v is None:
                continue
            if type(v) is str:
                out.append(f"{name}: {v}" if keyed else v)
            else:
                _strings(v, name, out, depth + 1)
    else:
        _strings_of_other(value, key, out, depth)


def _strings_of_other(value: object, key: str, out: list[str], depth: int) -> None:
    """`_strings` for what is not a plain str, list, tuple, scalar or known dataclass."""
    if isinstance(value, str):
        out.append(f"{key}: {value}" if key and _keyed(key) else value)
    elif value is None or isinstance(value, bool | int | float):
        if key and value is not None and _keyed(key):
            out.append(f"{key}: {value}")
    elif depth > 64:
        out.append(str(value))
    elif isinstance(value, dict):
        for k, v in value.items():
            out.append(str(k))
            _strings(v, str(k), out, depth + 1)
    elif isinstance(value, list | tuple | set | frozenset):
        if isinstance(value, tuple) and hasattr(value, "_fields"):
            for name, v in zip(value._fields, value, strict=True):
                _strings(v, name, out, depth + 1)
        else:
            for v in value:
                _strings(v, key, out, depth + 1)
    elif isinstance(value, PurePath):
        out.append(str(value))
    else:
        for name in _field_names(type(value)):
            _strings(getattr(value, name, None), name, out, depth + 1)


_FIELDS: dict[type, tuple[str, ...]] = {}
_KEYED_FIELDS: dict[type, tuple[tuple[str, bool], ...]] = {}
"""The dataclasses with fields, each field with whether a scalar under it is judged keyed."""


def _field_names(kind: type) -> tuple[str, ...]:
    names = _FIELDS.get(kind)
    if names is None:
        if dataclasses.is_dataclass(kind):
            names = tuple(f.name for f in dataclasses.fields(kind))
        else:
            names = ()
        _FIELDS[kind] = names
        if names:
            _KEYED_FIELDS[kind] = tuple((name, _keyed(name)) for name in names)
    return names


def _clean(value: object, key: str, extra: Sequence[SecretPattern], depth: int = 0) -> Any:
    if isinstance(value, str):
        cleaned = redact(value, extra)
        if key and _keyed(key):
            # `password: hunter2`: judged with its key, as the note holds it
            keyed = redact(f"{key}: {cleaned.text}", extra)
            prefix = f"{key}: "
            if keyed.found and keyed.text.startswith(prefix):
                return keyed.text[len(prefix) :]
        return cleaned.text if cleaned.found else value
    if value is None or isinstance(value, bool | int | float):
        if key and value is not None and _keyed(key):
            found = redact(f"{key}: {value}", extra).found
            if found:
                return marker(found[0])
        return value
    if depth > 64:
        return value
    if isinstance(value, dict):
        return {
            _clean(k, "", extra, depth + 1) if isinstance(k, str) else k: _clean(
                v, str(k), extra, depth + 1
            )
            for k, v in value.items()
        }
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        items = [_clean(v, n, extra, depth + 1) for n, v in zip(value._fields, value, strict=True)]
        return value._make(items)  # type: ignore[attr-defined]
    if isinstance(value, list | tuple | set | frozenset):
        return type(value)(_clean(v, key, extra, depth + 1) for v in value)
    if isinstance(value, PurePath):
        text = str(value)
        cleaned_path = redact(text, extra)
        return type(value)(cleaned_path.text) if cleaned_path.found else value
    names = _field_names(type(value))
    if not names:
        return value
    changes = {}
    for name in names:
        old = getattr(value, name, None)
        new = _clean(old, name, extra, depth + 1)
        if new is not old and new != old:
            changes[name] = new
    if not changes:
        return value
    try:
        return dataclasses.replace(value, **changes)  # type: ignore[type-var]
    except (TypeError, ValueError):  # a field outside __init__: set it on a copy
        twin = copy.copy(value)
        for name, new in changes.items():
            object.__setattr__(twin, name, new)
        return twin


# A key under which a scalar is judged as `key: value`: one a secret keyword can end.
_KEYED = re.compile(r"(?i:pass|secret|token|key|credential|private|auth)")


@functools.lru_cache(maxsize=4096)
def _keyed(key: str) -> bool:
    """`_KEYED.search(key)`, remembered: the keys are a note's few field and property names."""
    return bool(_KEYED.search(key))


def redact_value(value: _T, extra: Sequence[SecretPattern] = ()) -> _T:
    """`value` (a result: dataclasses, named tuples, dicts, lists, text, numbers, paths, to any
    depth) with every secret in any text, key or `key: number` replaced by its marker; the
    same object when nothing is secret, found by one look for the patterns' triggers (the usual
    case). The one redaction every result of the `Vault` facade passes, so a field added to a
    result type cannot skip it. Dataclasses come back as copies with the changed fields."""
    if isinstance(value, list) and len(value) > 1:
        # a list of hits: each judged alone, so one hit's trigger word cleans only that hit
        items = [redact_value(item, extra) for item in value]
        same = all(a is b for a, b in zip(items, value, strict=True))
        return value if same else cast(_T, items)
    texts: list[str] = []
    _strings(value, "", texts)
    if not _could_hold(texts, extra):
        return value
    return cast(_T, _clean(value, "", extra))


def _could_match(text: str, extra: Sequence[SecretPattern]) -> bool:
    """Whether `_redact` would run any pattern on `text`: its triggers and, for the keyword
    patterns, what must follow the keyword (`_REFINED`); finer than `may_hold_secrets`, whose
    bare trigger words ("pass", "api", "token") are common in prose."""
    if extra or _UNTRIGGERED or _PGPASS_TRIGGER.search(text):
        return True
    folded = _folded(text)
    present = _present(text, folded)
    if not any(present):
        return False
    candidates = _candidates(present)
    return any(_may_match(name, text, folded, candidates) for name in candidates)


def may_change(texts: Sequence[str], extra: Sequence[SecretPattern] = ()) -> bool:
    """False when `redact` leaves each of `texts` as it is, found by one look at them all for
    the patterns' triggers and what their keywords need next: finer than `may_hold_secrets`
    (a search's snippets, which name "token" or "key" often, are judged by it)."""
    return _could_hold(texts, extra)


def _could_hold(texts: Sequence[str], extra: Sequence[SecretPattern]) -> bool:
    """`_could_match` over `texts` joined (no trigger spans a line break), and over the reader's
    view of them, as `redact` looks at both."""
    joined = "\n".join(texts)
    if _could_match(joined, extra):
        return True
    view = reader_view(joined)
    return view is not joined and _could_match(view, extra)


def redact_note(note: Note, extra: Sequence[SecretPattern] = ()) -> Note:
    """The note with secrets replaced in every text the index stores of it: title, frontmatter
    (keys, values, `key: number`), aliases, tags, headings (and their anchors), block ids,
    link text, targets and subpaths, sections. Links are resolved before this (a target holding
    a secret names no indexed file anyway: `secret_names`)."""
    return redact_value(note, extra)


def secret_names(paths: Sequence[str], extra: Sequence[SecretPattern] = ()) -> dict[str, str]:
    """{path: the path redacted} for each of `paths` whose file or folder names hold a secret;
    one look for the triggers over them all first (a vault's paths hold none, the usual case)."""
    if not extra and len(paths) > _FEW_PATHS:
        paths = _triggered(paths)  # one pass over them all, as below, but picking paths
    elif not may_hold_secrets(paths, extra):
        return {}
    out: dict[str, str] = {}
    for path in paths:
        if may_hold_secrets((path,), extra):
            cleaned = redact(path, extra)
            if cleaned.found:
                out[path] = cleaned.text
    return out


_FEW_PATHS = 256
"""Above this many paths, `secret_names` looks at those `_triggered` picks, not at each."""


def _triggered(paths: Sequence[str]) -> list[str]:
    """The paths that `may_hold_secrets` could say yes to, found by C-level searches of the
    paths joined (a vault's walk: 100,000 paths, 3% of a generated vault's names holding a
    trigger word such as "token"; asking of each path took 0.48 s of CPU there).

    It may pick more, never fewer: a path is picked when its lowered text holds a trigger
    word or the path itself a trigger literal, the pgpass trigger, a backslash, an `&` or a
    `*` (`reader_view` changes only such a path, or one that is not ASCII: those are all
    picked, as is a name with a line break). No trigger spans a line break, so each match
    lies within one path."""
    picked = [p for p in paths if not p.isascii() or "\n" in p]
    plain = "\n".join([p for p in paths if p.isascii() and "\n" not in p])
    lowered = plain.lower()  # an ASCII text's offsets stay as they were
    hits: list[int] = []
    for text, needles in ((lowered, _ANY_WORD), (plain, (*_ANY_LITERAL, "\\", "&", "*"))):
        for needle in needles:
            at = text.find(needle)
            while at >= 0:
                hits.append(at)
                at = text.find(needle, at + 1)
    if ":" in plain:
        hits.extend(m.start() for m in _PGPASS_TRIGGER.finditer(plain))
    for at in hits:
        end = plain.find("\n", at)
        picked.append(plain[plain.rfind("\n", 0, at) + 1 : len(plain) if end < 0 else end])
    return list(dict.fromkeys(picked))
