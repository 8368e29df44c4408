"""The PostgreSQL backend's vectors: nearest-vector SQL, exact and through HNSW."""
