"""Storage: the only package that talks to DuckDB. Everything above it sees plain values."""
