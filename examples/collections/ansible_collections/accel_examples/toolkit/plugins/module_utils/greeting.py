# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Text for the example module."""

from __future__ import annotations


def greet(name: str) -> str:
    return f"hello, {name}"
