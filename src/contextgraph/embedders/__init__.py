"""The 13 embedders (docs/spaces.md) behind one protocol, the shared transformer, and the pipeline that turns a batch
of memories into complete fingerprints with one forward pass."""
