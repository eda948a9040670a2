#!/usr/bin/env python
"""Thin wrapper: see azero/distributed/faults.py (kill -9 Ray actors during a training run)."""

import sys

from azero.distributed.faults import main

if __name__ == "__main__":
    sys.exit(main())
