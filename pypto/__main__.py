"""python -m pypto build FILES... (see pypto.cli)"""
import sys

from pypto.cli import main

sys.exit(main())
