"""The one exception hierarchy: every failure a user can see has a stable code and a hint.

Trouble with a single note is never an exception: it is a `Problem` in the report.
Exceptions are for broken invariants and I/O failures that stop an operation.
"""

from __future__ import annotations


class VaultmemError(Exception):
    """Root of every error vaultmem raises on purpose. `code` is stable; `hint` is the next step."""

    code = "error"
    default_hint = ""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint if hint is not None else self.default_hint

    def to_dict(self) -> dict[str, object]:
        return {"code": self.code, "message": self.message, "hint": self.hint}


class ConfigError(VaultmemError):
    """`.vaultmem/config.toml` is wrong (or, for `vaultmem init`, is already there). Raised only
    where the config file is read or written (`core/config.py`, and `core/secrets.py` for its
    `[[secrets.patterns]]`); tests/integration/test_error_codes.py forbids it elsewhere."""

    code = "config_invalid"
    default_hint = "Fix the named key in .vaultmem/config.toml (vaultmem init writes a valid one)."


class InvalidArgumentError(VaultmemError):
    """An argument is wrong: a command-line option, an MCP tool argument or a `Vault` method's
    parameter (a bad key, an unknown mode, a text over `max_note_bytes`): a usage error, exit 2
    in the CLI. The adapters' contract checks what it can declare; the layers below raise it
    for what only they can judge, so the code is the same whichever way the call came."""

    code = "invalid_argument"
    default_hint = "Check the value against `vaultmem <command> --help` (or the tool's schema)."


class VaultNotFoundError(VaultmemError):
    code = "vault_not_found"
    default_hint = "Pass --vault PATH, set VAULTMEM_VAULT, or run `vaultmem init` in the vault."


class NotFoundError(VaultmemError):
    """A note, topic or edge named by the user does not exist."""

    code = "not_found"
    default_hint = "Check the name with `vaultmem search` or `vaultmem status`."


class AmbiguousError(VaultmemError):
    """A name matches several notes; `candidates` lists them."""

    code = "ambiguous"
    default_hint = "Name the note by its path or id."

    def __init__(self, message: str, candidates: list[str], *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.candidates = candidates

    def to_dict(self) -> dict[str, object]:
        return {**super().to_dict(), "candidates": self.candidates}


class LockedError(VaultmemError):
    """Another writer holds the vault lock, or DuckDB's file lock stayed held past our retries."""

    code = "locked"
    default_hint = "Wait for the other vaultmem process to finish, then run the command again."


class IndexUnavailableError(VaultmemError):
    """The index is missing or unusable for a read."""

    code = "index_unavailable"
    default_hint = "Run `vaultmem reconcile` to build the index."


class QueryError(VaultmemError):
    """A search query or SQL statement was rejected."""

    code = "query_invalid"
    default_hint = (
        'Search takes words, "phrases", -excluded, tag:x, path:f/ and type:y '
        "(`vaultmem search --help`)."
    )


class QueryTimeoutError(QueryError):
    """A read-only SQL statement ran past its time limit and was interrupted."""

    code = "query_timeout"
    default_hint = "Narrow the query (WHERE, LIMIT) or raise --timeout-s."


class FileAccessError(VaultmemError):
    """The file system refused an operation (permissions, a missing folder, a full disk)."""

    code = "io_error"
    default_hint = "Check that the path exists and that you may read and write it."

    @classmethod
    def from_os_error(cls, error: OSError) -> FileAccessError:
        where = f": {error.filename}" if error.filename else ""
        return cls(f"{error.strerror or error}{where}")


class InternalError(VaultmemError):
    """A bug: an exception vaultmem did not expect. Adapters turn it into this envelope."""

    code = "internal_error"
    default_hint = "This is a bug in vaultmem; please report the command and this message."


class SemanticUnavailableError(VaultmemError):
    """Vector search was asked for, but semantic recall is off or its package is missing."""

    code = "semantic_unavailable"
    default_hint = (
        "Install the extra (pip install 'vaultmem[semantic]'), set `semantic = true` under "
        "[search] in .vaultmem/config.toml, then run `vaultmem reconcile`."
    )


class PathEscapeError(VaultmemError):
    """A key, scope id or imported name would leave the managed folder."""

    code = "path_escape"
    default_hint = "Use a key of lower-case letters, digits and hyphens."


class SecretError(VaultmemError):
    """Content holds a secret where the scope forbids one. Names patterns, never the bytes."""

    code = "secret_detected"
    default_hint = "Remove the secret, or store it in a session or project scope (redacted)."


class PartialWriteError(VaultmemError):
    """The file was published but the index update failed: the vault is right, the index stale."""

    code = "partial_write"
    default_hint = "Run `vaultmem reconcile` to repair the index. Do not retry the write."

    def __init__(self, message: str, phases_done: list[str], *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.phases_done = phases_done

    def to_dict(self) -> dict[str, object]:
        return {**super().to_dict(), "phases_done": self.phases_done, "retry": False}
