#!/usr/bin/env python
"""Thin wrapper: see azero/cli/bench.py (also available as `azero bench`)."""

import sys

from azero.cli.bench import main

if __name__ == "__main__":
    sys.exit(main())
