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
    try:
        from memlane.hooks.launcher import main
    except ImportError:  # a memlane without it comes first (PYTHONPATH): its own hook
        try:
            __import__("site").main()
            from memlane.hooks.dispatch import run_hook

            run_hook(sys.argv[-1], exit_when_done=True, relay=True)
        finally:
            __import__("posix")._exit(0)  # a hook never fails the agent
    main()
