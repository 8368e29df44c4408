"""Documents: knowledge retrieval in the same governed index as memory (DESIGN.md 1).

A document is a source record (id, scope, title, source URI, content hash,
version, times, sensitivity); its chunks are derived along its structure
(`remem.documents.parse`, `remem.documents.chunk`) and indexed in the store's
word and vector machinery (`remem.store.flows.documents`). Who may read which
is `remem.documents.scope`; the flows every surface calls are
`remem.documents.flows`. A document never becomes a memory record by itself.
"""
