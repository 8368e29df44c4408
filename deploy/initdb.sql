-- Run once by the postgres image on an empty data directory (docker-entrypoint-initdb.d).
-- remem connects as an ordinary role that owns its tables: a superuser bypasses
-- row-level security, the database's second tenant wall, and `remem serve` refuses one.
-- pgvector needs a superuser to create the extension; remem's migrations then find it.
-- Change the password (and REMEM_DB in docker-compose.yml) before exposing anything.
CREATE ROLE remem_app LOGIN PASSWORD 'remem_app';
CREATE DATABASE remem OWNER remem_app;
\connect remem
CREATE EXTENSION IF NOT EXISTS vector;
