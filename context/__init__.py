"""Context windows: how many tokens a request takes (`tokens`), how many a model takes
(`windows`), what is dropped to fit (`fitting`), and how a long context is summarised into a
`compaction` item (`compaction`)."""
