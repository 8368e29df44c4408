"""The SQLite backend's vectors: read out of the database (`load`), kept in files beside
it (`files`), searched in memory (`index`) with a coarse int8 pass (`coarse`)."""
