"""``python -m dataset_builder.reference_checks``: see ``cli.main``."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
