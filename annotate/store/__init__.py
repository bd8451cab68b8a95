"""Storage: SQLite through SQLModel. No Textual here."""
