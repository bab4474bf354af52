"""Retrieval over uploaded files: parsing, chunking, embedding and ranking (pure but the embedder\x27s HTTP)."""
