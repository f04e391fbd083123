"""Teleology kernels (docs/engine.md#purpose-and-the-north-star): the north star as a fingerprint, purpose vectors and
what derives from them (cross-correlations, group alignments, Tucker/HOSVD), the synergy matrix, profile fusion,
clustering for the star and sub-goals, and drift. Pure: numpy/scipy/scikit-learn in, numpy out."""
