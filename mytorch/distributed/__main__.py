"""`python -m mytorch.distributed -n N script.py [args]`: the launcher
(`mytorch.distributed.launch`)."""

import sys

from mytorch.distributed.launch import main

sys.exit(main())
