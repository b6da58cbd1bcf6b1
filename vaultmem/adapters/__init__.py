"""The two ways in: the click CLI and the MCP server, both generated from one operation table
(`commands/`), and how results are rendered."""
