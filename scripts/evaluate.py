#!/usr/bin/env python
"""Thin wrapper: see azero/cli/evaluate.py (also available as `azero evaluate`)."""

import sys

from azero.cli.evaluate import main

if __name__ == "__main__":
    sys.exit(main())
