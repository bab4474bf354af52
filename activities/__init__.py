"""All I/O done on behalf of a workflow: inference, store writes (and later MCP)."""
