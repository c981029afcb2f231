"""The models whose wait is a real database: closed-loop HTTP load on TechEmpower's /db and /queries routes of the
database servers (manifest.DB_SERVERS), each with a throwaway PostgreSQL beside it (run/postgres.py)."""
