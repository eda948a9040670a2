#!/usr/bin/env python
"""Thin wrapper: see azero/cli/planning.py (also available as `azero planning`)."""

import sys

from azero.cli.planning import main

if __name__ == "__main__":
    sys.exit(main())
