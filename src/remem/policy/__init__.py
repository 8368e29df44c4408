"""Pure decisions: precedence, validity, scope. No I/O anywhere in this package."""
