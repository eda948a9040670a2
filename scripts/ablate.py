#!/usr/bin/env python
"""Thin wrapper: see azero/cli/ablate.py (also available as `azero ablate`)."""

import sys

from azero.cli.ablate import main

if __name__ == "__main__":
    sys.exit(main())
