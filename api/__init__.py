"""The HTTP API: the routes, one module a resource (`responses`, `approvals`, `conversations`,
`files`, `vector_stores`, `containers`, `webhooks`, ...). What the routes share is in
`http_plumbing/`, what they do with a response in `response_service/`."""
