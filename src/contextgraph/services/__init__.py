"""Use-cases, one area per module: async-friendly, no mcp imports."""
