"""Agent set-up: vaultmem's entries in each agent's own config files, outside the vault."""
