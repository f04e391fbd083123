"""One module per transport; each serves the same App."""
