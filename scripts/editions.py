#!/usr/bin/env python3
"""Write the reader and student editions of every chapter (editions/).

Run after editing a chapter: ``.venv/bin/python scripts/editions.py``.  The
numbers come from ``_ext/editions_numbers.json``, which every book build
refreshes; a label it does not know yet is written ``??`` (with a warning)
until the next build.  ``--check`` writes nothing and exits 1 when an
edition is out of date or a label is unknown (as tests/test_editions.py
does).  ``--numbers-from _build/.doctrees/environment.pickle`` first
rewrites the numbers file from the environment of a finished build.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))

import edition_numbers  # noqa: E402
import editions  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="only report editions that are out of date",
    )
    parser.add_argument(
        "--numbers-from",
        type=Path,
        metavar="PICKLE",
        help="a build's environment.pickle to read the numbers from",
    )
    args = parser.parse_args()
    if args.numbers_from is not None:
        if not args.numbers_from.is_file():
            parser.error(f"--numbers-from: no file {args.numbers_from}")
        docs = editions.toc_docs(ROOT)
        numbers = edition_numbers.from_pickle(args.numbers_from, docs)
        edition_numbers.save(numbers)
        print(f"wrote {edition_numbers.NUMBERS_FILE.relative_to(ROOT)}")
    book = editions.load_book(ROOT, strict=args.check)
    try:
        changed = editions.write_all(book, write=not args.check)
    except editions.EditionError as e:  # strict (--check) only
        print(f"out of date: {e}")
        return 1
    for path in changed:
        done = "wrote" if path.is_file() else "removed"
        done = "out of date:" if args.check else done
        print(f"{done} {path.relative_to(ROOT)}")
    if args.check:
        return 1 if changed else 0
    if book.missing:
        print(
            f"warning: {len(book.missing)} labels are not numbered yet "
            f"(written ??; the book build numbers them): "
            f"{', '.join(sorted(book.missing))}",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
