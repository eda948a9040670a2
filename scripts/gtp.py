#!/usr/bin/env python
"""Thin wrapper: see azero/cli/gtp.py (also available as `azero gtp` and `azero-gtp`)."""

import sys

from azero.cli.gtp import main

if __name__ == "__main__":
    sys.exit(main())
