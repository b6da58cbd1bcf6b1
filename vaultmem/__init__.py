"""vaultmem: an Obsidian vault as the memory of AI agents.

The vault's Markdown is the truth; `.vaultmem/index.duckdb` is a rebuildable view of it.
"""

__version__ = "0.1.0"
