#!/usr/bin/env python
"""Thin wrapper: another name for scripts/evaluate.py (see azero/cli/evaluate.py; also `azero match`)."""

import sys

from azero.cli.evaluate import main

if __name__ == "__main__":
    sys.exit(main())
