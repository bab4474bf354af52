"""Process roles: settings, the Temporal client, the worker, the HTTP app `serve` runs
(`http_app`), the `dev` launcher and the CLI."""
