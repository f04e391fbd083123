"""Pure kernels of adaptive threshold calibration (ATC, docs/engine.md) and of Meta-UTL's λ adaptation: numpy/scipy/
scikit-learn in, numbers out; no I/O, no state. services/atc.py and services/meta_learning.py own the state."""
