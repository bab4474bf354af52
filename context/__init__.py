"""Pure: how many tokens a request takes (`tokens`), what is dropped to fit a window
(`fitting`, `plan`), what a backend's refusal says the window is (`overflow`), and how a long
context is summarised into a `compaction` item (`compaction`). How many tokens a model's
window takes is the upstream's to say (`upstream/windows.py`)."""
