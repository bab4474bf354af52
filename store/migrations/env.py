"""Alembic's entry point. At start, migrations run on the connection `store/migrate.py` hands
over in `config.attributes["connection"]`, inside the transaction that already holds the
schema lock, so the lock and the upgrade commit together. From the `alembic` command line
(writing a new revision), on the database named by `-x url=...`."""

from alembic import context
from sqlalchemy import Connection, create_engine

from store.schema import metadata


def run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        # SQLite alters most things only by copying a table; batch mode does that for us.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


handed_over = context.config.attributes.get("connection")
if handed_over is not None:
    run(handed_over)
else:
    url = context.get_x_argument(as_dictionary=True).get("url")
    if not url:
        raise SystemExit("name a scratch database: alembic -x url=sqlite:///scratch.db ...")
    engine = create_engine(url)
    with engine.begin() as connection:
        run(connection)
    engine.dispose()
