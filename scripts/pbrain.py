#!/usr/bin/env python
"""Thin wrapper: see azero/cli/pbrain.py (also available as `azero pbrain` and `azero-pbrain`)."""

import sys

from azero.cli.pbrain import main

if __name__ == "__main__":
    sys.exit(main())
