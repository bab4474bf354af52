"""Keys and sealing: one master key ring (`SECRETS_KEY`), a key per purpose derived from it,
blobs bound to their project, and the payload codec that keeps Temporal's history unreadable."""
