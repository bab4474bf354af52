"""Webhooks: background responses' events, signed as OpenAI signs them (Standard Webhooks)
and delivered durably, each delivery its own Temporal workflow."""
