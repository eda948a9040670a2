#!/usr/bin/env python
"""Thin wrapper: see azero/cli/judge.py (also available as `azero judge`)."""

import sys

from azero.cli.judge import main

if __name__ == "__main__":
    sys.exit(main())
