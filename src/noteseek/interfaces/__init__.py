"""Adapters over the engine: CLI (and later MCP, HTTP)."""
