"""The HTTP door of ``noteseek serve``: the app (``app.py``), its routes generated from the
operations table (``routes.py``) and what guards them (``guard.py``)."""

from noteseek.interfaces.http.app import create_app
from noteseek.interfaces.http.guard import is_loopback

__all__ = ["create_app", "is_loopback"]
