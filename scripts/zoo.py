#!/usr/bin/env python
"""Thin wrapper: see azero/cli/zoo.py (also available as `azero zoo`)."""

import sys

from azero.cli.zoo import main

if __name__ == "__main__":
    sys.exit(main())
