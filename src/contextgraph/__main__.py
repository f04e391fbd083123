"""python -m contextgraph → the CLI."""

from contextgraph.cli import main

raise SystemExit(main())
