"""The command agents run for every hook: ``python -S …/memlane/hooks/launch.py EVENT``.

Run as a script, so ``sys.path[0]`` is this file's directory: it is dropped, and
the directory holding the ``memlane`` package is appended (after the standard
library, where site-packages would be). Then :mod:`memlane.hooks.launcher` does
the work: imported, its compiled form is cached; a script is compiled on every run.
"""

import sys

if __name__ == "__main__":
    del sys.path[0]
    _here = __file__ if __file__.startswith("/") else __import__("posix").getcwd() + "/" + __file__
    sys.path.append(_here.rsplit("/", 3)[0] or "/")  # three levels up: the package root
    from memlane.hooks.launcher import main

    main()
