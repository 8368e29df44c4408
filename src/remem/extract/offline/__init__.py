"""The offline extractor: deterministic rules that turn one user turn into candidates
(`extractor`), one module per kind of rule."""
