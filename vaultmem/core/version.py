"""The release's version, in the lowest layer: the index, the OKF producer and the CLI all
record it, and importing it from the package root would make every layer import the root
that hands out `Vault` (the top)."""

__version__ = "0.1.0"
