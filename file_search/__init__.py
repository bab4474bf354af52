"""File search over uploaded files: parsing (`parsing`, in a confined reader process:
`reader`), chunking (`chunking`), embedding (`embedder`; the lexical embedder that needs no
backend is `demo/lexical_embedder.py`), and ranking and searching a store's chunks
(`ranking`, `searching`)."""
