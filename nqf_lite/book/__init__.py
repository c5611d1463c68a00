"""The book's machinery: what the ``book`` extra serves.

- :mod:`~nqf_lite.book.claims`: the claims ledger (every checked number);
- :mod:`~nqf_lite.book.seeding`: the book-wide base seed ``NQF_SEED``;
- :mod:`~nqf_lite.book.plotting`: figure style and figure data;
- :mod:`~nqf_lite.book.widgets`: the explorers;
- :mod:`~nqf_lite.book.exercises`: the exercises and their judges;
- :mod:`~nqf_lite.book.about`: which edition a reader runs.

This layer imports the library and the experiments, never the other way.
"""
