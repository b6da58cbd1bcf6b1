"""`python -m vaultmem`: the same command line as the `vaultmem` script."""

import sys

from vaultmem.adapters.cli import main

if __name__ == "__main__":
    sys.exit(main())
