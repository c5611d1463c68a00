"""IPython kernel configuration for the book build (copied to $IPYTHONDIR by
scripts/build_book.sh).

The build executes each chapter in a local kernel that jupyter-client connects
to over TCP on 127.0.0.1; ipykernel then logs "Kernel is running over TCP
without encryption ..." for every chapter.  That notice is about multi-user
servers, not about a build, so it is dropped here; every other kernel message
still reaches the log.
"""

import logging


class _NoTransportNotice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "without encryption" not in record.getMessage()


logging.getLogger("IPKernelApp").addFilter(_NoTransportNotice())

# Figures are drawn as SVG in the build: vector graphics, sharp on a screen of
# any density and in the printed PDFs (scripts/build_pdf.py), at the same size
# on the page as before.
c = get_config()  # noqa: F821 -- provided by IPython when it loads this file
c.InlineBackend.figure_formats = {"svg"}
# the pixels inside a vector figure (an image of a matrix) at print resolution,
# not the screen's 100
c.InlineBackend.print_figure_kwargs = {"bbox_inches": "tight", "dpi": 250}
