#!/usr/bin/env python
"""Thin wrapper: see azero/cli/match.py (also available as `azero match`)."""

import sys

from azero.cli.match import main

if __name__ == "__main__":
    sys.exit(main())
