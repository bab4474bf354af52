"""The response service, behind every surface that makes or reads a response (the API's
routes, the WebSocket mode, the worker's sweeps): a request made into a response
(`preparation`: its approvals, containers, prompt and context size checked), kept and started
(`starting`, `runner`, its history erased in time: `history_eraser`), admitted while the
server has room (`admission`), and read while it runs (`lookup`, `progress`)."""
