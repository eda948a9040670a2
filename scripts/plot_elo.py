#!/usr/bin/env python
"""Thin wrapper: see azero/cli/plot_elo.py (also available as `azero plot_elo`)."""

import sys

from azero.cli.plot_elo import main

if __name__ == "__main__":
    sys.exit(main())
