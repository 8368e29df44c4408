"""The SQLite backend: the store, its named SQL, search, documents, erasure and thread
state, its migrations, and its in-memory vector engine (`vectors`)."""
