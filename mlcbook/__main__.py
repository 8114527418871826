"""``python -m mlcbook`` is the ``mlcbook`` command."""

from .cli import main

raise SystemExit(main())
