"""The SQLite store (through APSW): every SQL statement of the project lives here."""
