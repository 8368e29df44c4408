"""remem as a service: the HTTP API, its API-key principals, and a Python client.

    keys.py     API keys: create (secret shown once, sha256 stored), verify, list, revoke
    schemas.py  the request bodies (pydantic, validated at the edge)
    http.py     `create_app`: FastAPI over one `Memory` per tenant, extraction in-process
    client.py   `Client(url, api_key)`: `Memory`'s methods over HTTP

Its commands (`remem serve`, `remem keys ...`, `remem mcp`) are in `remem.cli`.

Nothing here is imported by `remem` itself, so FastAPI, uvicorn and httpx are
needed only by those who run or call the service.
"""
