"""OKF (Open Knowledge Format v0.2) bundles: export vault notes as concepts, import them back.

`bundle` reads untrusted folders and archives safely, `concept` maps frontmatter both ways (pure),
`rewrite` turns wikilinks into bundle links and back (pure), `export` and `ingest` are the two
operations, `validate` checks a bundle, and `sink` is the seam to the managed-folder write path.
The mapping is documented field by field in docs/okf.md.
"""
