"""Where the surge program is: installed inside this package (bin/surge), by pip or by the build tree."""
from pathlib import Path


def program():
    return Path(__file__).resolve().parent / "bin" / "surge"
