"""ContextGraph: a persistent, curated memory server for AI agents, spoken to over MCP."""

__version__ = "0.1.0"
