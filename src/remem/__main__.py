"""`python -m remem`: the same command line as the `remem` script."""

from remem.cli import main

raise SystemExit(main())
