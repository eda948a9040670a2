#!/usr/bin/env python
"""Thin wrapper: see azero/cli/train.py (also available as `azero train`)."""

import sys

from azero.cli.train import main

if __name__ == "__main__":
    sys.exit(main())
