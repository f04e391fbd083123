"""Pure graph math (docs/architecture.md): effective edge weights, reversal hashes, path and cycle search."""
