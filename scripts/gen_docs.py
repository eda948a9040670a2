#!/usr/bin/env python
"""Regenerate docs/configuration.md from the config schema (azero/config_docs.py).

Run it after changing a config field, its help text or a preset; tests/test_docs.py fails
while the committed page is stale.
"""

import sys
from pathlib import Path

from azero.config_docs import write_configuration_page

if __name__ == "__main__":
    path = write_configuration_page(Path(__file__).resolve().parent.parent)
    print(f"wrote {path}")
    sys.exit(0)
