#!/usr/bin/env python3
"""Write the reader and student editions of every chapter (editions/reader, editions/student).

Run after editing a chapter: ``.venv/bin/python scripts/editions.py``.  ``--check`` writes nothing
and exits 1 when an edition is out of date (tests/test_editions.py does the same).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))

import editions  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report editions that are out of date")
    args = parser.parse_args()
    if args.check:
        book = editions.load_book(ROOT)
        stale = [
            str(editions.edition_path(ROOT, page.doc, name).relative_to(ROOT))
            for page in editions.chapters(book)
            for name in editions.EDITIONS
            if not editions.edition_path(ROOT, page.doc, name).is_file()
            or editions.edition_path(ROOT, page.doc, name).read_text(encoding="utf-8")
            != editions.dumps(editions.edition(book, page.doc, name))
        ]
        for path in stale:
            print(f"out of date: {path}")
        return 1 if stale else 0
    for path in editions.write_all(ROOT):
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
