"""python -m surge ...: the surge command line (the program installed in this package)."""
import os
import sys

from ._program import program


def main():
    path = program()
    if not path.exists():
        sys.stderr.write(f"surge: the surge program is missing from this package ({path}); reinstall it\n")
        sys.exit(1)
    os.execv(path, [str(path), *sys.argv[1:]])


if __name__ == "__main__":
    main()
