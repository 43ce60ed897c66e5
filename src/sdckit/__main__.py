"""``python -m sdckit``: the command line (same as the ``sdckit`` console script)."""

from sdckit.cli.app import main

if __name__ == "__main__":
    main()
