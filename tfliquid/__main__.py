import sys

from tfliquid.cli import main

sys.exit(main())
