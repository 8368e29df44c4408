"""The front door: `Memory`, `AsyncMemory`, the dependencies they hand the flows beneath
(`deps`), and `Memory`'s read, document and lifecycle methods."""
