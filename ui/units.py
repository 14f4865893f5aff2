"""One way to write sizes in the app: decimal units (1 KB = 1,000 bytes), as the file uploader writes them.

Two formatters (the uploader's decimal 8.0 KB beside a table's binary 7.8 KB) made one file look like two sizes.
"""

from __future__ import annotations

UNITS = ("KB", "MB", "GB", "TB")


def human_size(n_bytes: int) -> str:
    """``512 B``, ``8.0 KB``, ``2.4 MB``: one decimal, units of 1,000."""
    if n_bytes < 1000:
        return f"{n_bytes} B"
    size = float(n_bytes)
    for unit in UNITS:
        size /= 1000
        if size < 999.95 or unit == UNITS[-1]:
            return f"{size:.1f} {unit}"
    raise AssertionError("unreachable")
