"""``python -m pipelines <command> ...``; see ``python -m pipelines --help``."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
