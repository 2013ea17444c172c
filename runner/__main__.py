import sys

from runner.ops.cli import main

sys.exit(main())
