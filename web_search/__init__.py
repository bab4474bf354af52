"""Web search: providers behind one interface (`provider`), each a small adapter
(`searxng`, `tavily`, `brave`, `demo`), and what the model is shown and cites (`citations`)."""
