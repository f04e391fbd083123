"""Pure GWT kernels (docs/engine.md): the Kuramoto network, per-memory binding and C = I·R·D. Numpy in, numpy out;
no I/O, no clocks, no locks: the engine state that calls them lives in services/gwt.py."""
