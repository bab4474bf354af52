"""The store's schema versions (Alembic). `store/migrate.py` applies them at start; `env.py`
runs them on the connection it is handed, inside the caller's locked transaction."""
