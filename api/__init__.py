"""The HTTP API: app factory, routes, request preparation and error mapping."""
