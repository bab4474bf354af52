"""The built-in models that need no backend: the demo chat model (`demo/echo` and friends),
its moderation classifier (`keyword_moderation`) and the lexical embedder (`lexical_embedder`,
also the default `EMBEDDING_MODEL`), with a small MCP server of harmless tools, so a newcomer
can see streaming, background mode, cancel, tool calls and approvals that survive a restart
on any machine, before pointing the server at a real backend."""
