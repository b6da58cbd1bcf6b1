"""The vault's files: reading them (scan), writing the managed folder, atomic writes, locks."""
