"""The tool layer: ToolSpec tables per category, the registry built from them, and the one dispatcher."""
