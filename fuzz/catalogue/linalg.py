"""Op family: linalg. (Specs are added here.)"""
from __future__ import annotations

SPECS: list = []
