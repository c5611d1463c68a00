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
    if args.check:
        stale = []
        for doc in (page.doc for page in editions.chapters(book)):
            for name in editions.EDITIONS:
                path = editions.edition_path(ROOT, doc, name)
                try:
                    text = editions.dumps(editions.edition(book, doc, name))
                except editions.EditionError as e:
                    stale.append(f"{path.relative_to(ROOT)} ({e})")
                    continue
                if not path.is_file() or path.read_text("utf-8") != text:
                    stale.append(path.relative_to(ROOT))
        for path in stale:
            print(f"out of date: {path}")
        return 1 if stale else 0
    for path in editions.write_all(book):
        print(f"wrote {path.relative_to(ROOT)}")
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
