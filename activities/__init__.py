"""All I/O done on behalf of a workflow, one class of activities a capability: the model's
turns, store writes, MCP, hosted tools, containers, webhooks."""
