"""``python -m annotate``: the same command line as the ``annotate`` console script."""

from annotate.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
