"""``python -m mica.fuzz``: the fuzzer's command line (:func:`mica.fuzz.cli.main`)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
