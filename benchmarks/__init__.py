"""vaultmem's benchmark harness: a deterministic vault generator, the same-run read floor and one
`bench_*` module per operation (parse, and later reconcile, search, watch). Not shipped with the
package; run with `python -m benchmarks.run` from the repository root. See `benchmarks/README.md`.
"""
