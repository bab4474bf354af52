"""Pydantic types only: the wire types of the Responses API and the activity payloads."""
