"""vaultmem: an Obsidian vault as the memory of AI agents.

The vault's Markdown is the truth; its index (kept outside the vault, on each machine) is a
rebuildable view of it.
`vaultmem.Vault` is the one API; it is imported on first use so that `import vaultmem` (and a
cold CLI start) stays cheap.
"""

from typing import TYPE_CHECKING, Any

from vaultmem.core.version import __version__

__all__ = ["Vault", "__version__"]

if TYPE_CHECKING:
    from vaultmem.vault import Vault


def __getattr__(name: str) -> Any:
    if name == "Vault":
        from vaultmem.vault import Vault

        return Vault
    raise AttributeError(f"module 'vaultmem' has no attribute {name!r}")
