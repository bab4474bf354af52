"""The chat-completions dialect every backend speaks: the Responses API's items and tools
turned into a chat request (`converter`, `tool_table`: a backend knows functions only), the
HTTP client that sends it (`client`, with what a backend says made fit for a tenant:
`redaction`), and its reply read back into output items, whole (`reply`) or as a stream of
chunks (`stream_assembler`, `streamed`). Nothing here knows Temporal or the store."""
