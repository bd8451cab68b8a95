"""``annotate serve``: the annotation app in a browser, through textual-serve.

:mod:`annotate.web.server` holds the server (import it only to serve: it imports aiohttp
and textual-serve); the page is ``index.html`` beside it. This module holds only the
names the server and ``annotate app --fixed-annotator`` share.
"""

FIXED_ANNOTATOR_ENV = "ANNOTATE_FIXED_ANNOTATOR"
"""With ``annotate app --fixed-annotator``: the annotator's name. ``annotate serve`` sets it
for the app process it starts for a browser (the name never goes on a command line)."""

FIXED_STUDY_ENV = "ANNOTATE_FIXED_STUDY"
"""With ``annotate app --fixed-annotator``: the only study the app lists and opens."""
