"""Storage: LMDB is the source of truth; per-space indexes are rebuildable caches that catch up from an
operation log (docs/storage.md)."""
