"""``python -m evaluation <command>``: see ``python -m evaluation --help``."""

import sys

from evaluation.cli import main

if __name__ == "__main__":
    sys.exit(main())
