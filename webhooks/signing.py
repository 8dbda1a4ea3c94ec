"""How a delivery is signed, the one place (docs/webhooks.md shows the receiver's side).

Header ``X-Trace-Studio-Signature: t=<unix seconds>,v1=<hex>`` where ``<hex>`` is
HMAC-SHA256(secret, "<t>." + raw body). A receiver recomputes it over the bytes it got, compares in constant
time, and refuses timestamps older than a few minutes (replays).
"""

from __future__ import annotations

import hashlib
import hmac

SIGNATURE_HEADER = "X-Trace-Studio-Signature"
EVENT_HEADER = "X-Trace-Studio-Event"
DELIVERY_HEADER = "X-Trace-Studio-Delivery"


def signature(secret: str, timestamp: int, body: bytes) -> str:
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def verify(secret: str, header: str, body: bytes, *, now: int, tolerance_s: int = 300) -> bool:
    try:
        parts = dict(item.split("=", 1) for item in header.split(","))
        timestamp = int(parts["t"])
    except (KeyError, ValueError):
        return False
    if abs(now - timestamp) > tolerance_s:
        return False
    return hmac.compare_digest(signature(secret, timestamp, body), f"t={timestamp},v1={parts.get('v1', '')}")
