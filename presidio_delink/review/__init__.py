"""Review before release: a local web page where a person checks, edits and signs off every
change of a ``delink`` output, each change verified at once against the index and the
attack panel.

:class:`~.session.ReviewSession` is the library (usable without a browser);
:mod:`.server` serves it (the ``review`` extra: Starlette, uvicorn, Jinja2).
"""

from presidio_delink.review.session import Conflict, ReviewSession, state_path_for
from presidio_delink.review.verify import PiiGuard, Verification, Verifier

__all__ = [
    "Conflict",
    "PiiGuard",
    "ReviewSession",
    "Verification",
    "Verifier",
    "state_path_for",
]
