#!/usr/bin/env python
"""Thin wrapper: see azero/cli/play.py (also available as `azero play`)."""

import sys

from azero.cli.play import main

if __name__ == "__main__":
    sys.exit(main())
