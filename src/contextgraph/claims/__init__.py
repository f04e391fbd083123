"""Claims: what a memory's sentence asserts, as far as plain text shows it (its words, its polarity, a move from one
state to another), and whether two memories contradict each other (docs/tools.md#critique). Pure text processing:
no I/O, no model, deterministic."""
