"""Pure UTL kernels: numbers in, numbers out; no I/O, no async, no logging."""
