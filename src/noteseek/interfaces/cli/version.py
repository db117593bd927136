"""The package's version, for ``noteseek --version`` (light: the command's fast path loads
nothing else)."""

from __future__ import annotations


def package_version() -> str:
    """The installed package's version (the source's when run from a tree not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("noteseek")
    except PackageNotFoundError:
        from noteseek import __version__

        return __version__
