"""The note model: one note's bytes in, its Markdown, properties and Obsidian links out. Pure."""
