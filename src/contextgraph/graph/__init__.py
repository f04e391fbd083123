"""Pure graph math (ARCHITECTURE rule 4): effective edge weights, reversal hashes, path and cycle search."""
