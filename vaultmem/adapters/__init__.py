"""The two ways in: the typer CLI and the MCP server, and how results are rendered."""
