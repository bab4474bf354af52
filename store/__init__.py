"""The SQL store: responses, their input items, chat context and event log."""
