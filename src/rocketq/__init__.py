"""rocketq: Apache RocketMQ rebuilt in pure Python, wire-compatible with the real thing."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
