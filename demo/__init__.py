"""The built-in demo: a model that needs no LLM (`demo/echo` and friends) and a small MCP
server of harmless tools, so a newcomer can see streaming, background mode, cancel, tool
calls and approvals that survive a restart on any machine, before pointing the server at a
real backend."""
