"""`python -m remem`: the same command line as the `remem` script."""

from remem.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
