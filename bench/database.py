"""What the benchmarks share: a PostgreSQL database of their own, made when missing (imported by the scripts beside
this file, which run as ``python bench/<name>.py``)."""

from __future__ import annotations


def ensure_database(url: str) -> None:
    """Create the database ``url`` names when it does not exist yet (through the server's ``postgres`` database)."""
    from urllib.parse import urlparse

    import psycopg

    parsed = urlparse(url)
    name = parsed.path.lstrip("/")
    admin = parsed._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
