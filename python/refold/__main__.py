"""`python -m refold …`: the refold command-line tool (the same code as the `refold` binary)."""

import sys

from ._refold import _cli


def main() -> None:
    sys.stdout.flush()
    raise SystemExit(_cli(sys.argv[1:]))


if __name__ == "__main__":
    main()
