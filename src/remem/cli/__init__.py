"""The `remem` command line: every click command of remem lives here (`main` is the root)."""
