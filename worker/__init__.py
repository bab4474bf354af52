"""Process roles: settings, the Temporal client, the worker, the `dev` launcher and the CLI."""
