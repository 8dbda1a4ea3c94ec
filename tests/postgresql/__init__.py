"""The test processes' PostgreSQL backend: Django's own, emptying the tables between transactional tests with DELETE
(base.py says why)."""
