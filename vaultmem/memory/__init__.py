"""Agent memory: topics in the managed folder, scopes, relations, recall and context."""
