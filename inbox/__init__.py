"""The approvals inbox: one web page, served by the API at `/inbox`, that lists the MCP calls
waiting for a decision and approves or denies them, through the public HTTP API only
(`GET /v1/approvals`, `POST /v1/responses/{id}/approvals`). Plain HTML, CSS and JavaScript
shipped in the package: no build step, nothing fetched from elsewhere."""
