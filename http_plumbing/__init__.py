"""What every HTTP surface of the server shares (the API's routes, the WebSocket mode, the
approvals inbox): a bounded JSON body (`body`), errors in OpenAI's shape (`errors`), the app's
parts and list paging (`params`), server-sent events (`sse`), multipart uploads (`uploads`),
the host check and the access middleware before the routes, and uvicorn's header timeout
(`http_protocol`). No route lives here."""
