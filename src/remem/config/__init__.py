"""The configuration door: one TOML file (`config`), its sections as values (`sections`)
and its schema (`file`)."""
