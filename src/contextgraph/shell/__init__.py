"""Shell integration: `contextgraph call` (one tool call from a script or hook) and `contextgraph hooks`
(a Claude Code hooks configuration that calls it)."""
