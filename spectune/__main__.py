"""``python -m spectune`` — the same as the ``spectune`` console script."""

from spectune.cli import entry

if __name__ == "__main__":
    raise SystemExit(entry())
