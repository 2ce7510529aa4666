"""``python -P -m evaluation.participant /inputs``: the reproduction's sandboxed worker."""

import sys

from evaluation.participant._worker import main

sys.exit(main(sys.argv[1:]))
