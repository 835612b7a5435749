"""`python -m flagadmin.serving`: the production stack (flagadmin/serving/stack.py)."""

import sys

from flagadmin.serving.stack import main

if __name__ == "__main__":
    sys.exit(main())
