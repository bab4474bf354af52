"""WebSocket mode of `/v1/responses` (`client.responses.connect()`): `response.create` and
`response.steer` in, a response's events out, several responses on one connection, lanes by
`stream_id`. The door, the checks and the event log are HTTP's (`api/`); this package is the
connection: its messages, its lanes, its limits, and the unstored responses it holds."""
