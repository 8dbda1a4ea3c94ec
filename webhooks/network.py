"""Where a delivery may go: the internet, or the hosts inside the studio's own network that the operator names.

A lead registers the address; the studio's worker POSTs to it and shows the lead the start of any answer that is not
2xx. Without a rule, a lead could point a webhook at what only the studio's machines reach (the cloud's metadata
service at 169.254.169.254, Redis, an internal admin page) and read its answers on the deliveries page. So an address
inside the network (loopback, private, link-local, shared, reserved, multicast: whatever ``ipaddress`` says is not
global) is refused unless its host is in ``STUDIO_WEBHOOKS_ALLOW_PRIVATE_HOSTS`` (names, addresses or networks) or
in ``STUDIO_WEBHOOKS_ALLOW_HTTP_HOSTS`` (named for plain http, a receiver on the same machine).

Registration checks addresses written as numbers (also the legacy forms ``0x7f000001``, ``2130706433``, ``127.1``)
and ``localhost``: no name is looked up in a web request. The worker looks the name up before each delivery, refuses
it when any of its addresses is inside, and connects to the address it checked (the TLS certificate is still checked
against the name), so a name that answers differently a moment later (DNS rebinding) cannot lead it elsewhere.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

import certifi
from django.conf import settings
from django.utils.translation import gettext

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

# What the deliveries page keeps of an answer that is not 2xx.
ANSWER_SHOWN = 200


class DeliveryRefused(Exception):
    """The delivery's address may not be reached from here; the message says why and which setting allows it."""


def _numeric(host: str) -> Address | None:
    """``host`` as an address when it is written as one, in any form the system's resolver reads as one."""
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        pass
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))  # 127.1, 0x7f000001, 2130706433
    except (OSError, UnicodeError, ValueError):
        return None


NAT64_PREFIXES = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


def embedded_ipv4(address: Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries and that a host may reach through it: mapped (``::ffff:a.b.c.d``),
    IPv4-compatible (``::a.b.c.d``), 6to4 (``2002:AABB:CCDD::/48``), NAT64 (``64:ff9b::/96``, ``64:ff9b:1::/48``) and
    Teredo (server and client). ``ipaddress`` calls 6to4, NAT64 and compatible addresses global, so
    ``2002:7f00:1::`` would pass for the internet while a relay on the way delivers it to 127.0.0.1."""
    if not isinstance(address, ipaddress.IPv6Address):
        return []
    found = [a for a in (address.ipv4_mapped, address.sixtofour) if a is not None]
    if address.teredo:
        found += list(address.teredo)
    low32 = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if any(address in prefix for prefix in NAT64_PREFIXES) or (address in IPV4_COMPATIBLE and int(address) > 1):
        found.append(low32)
    return found


def _inside(address: Address) -> bool:
    return any(not candidate.is_global or candidate.is_multicast for candidate in (address, *embedded_ipv4(address)))


def _allowed(host: str, address: Address | None) -> bool:
    entries = [*settings.WEBHOOKS_ALLOW_PRIVATE_HOSTS, *settings.WEBHOOKS_ALLOW_HTTP_HOSTS]
    if host.lower() in (entry.lower() for entry in entries):
        return True
    for entry in entries:
        try:
            network = ipaddress.ip_network(entry, strict=False)
        except ValueError:
            continue  # a name
        if address is not None and address in network:
            return True
    return False


def _refusal(host: str, address: Address) -> str:
    carried = ", ".join(str(a) for a in embedded_ipv4(address))
    words = {"host": host, "address": address, "carried": carried, "setting": "STUDIO_WEBHOOKS_ALLOW_PRIVATE_HOSTS"}
    if carried:
        return (
            gettext(
                "%(host)s is %(address)s (which carries %(carried)s), an address inside the studio's network; "
                "deliveries go there only to hosts named in %(setting)s"
            )
            % words
        )
    return (
        gettext(
            "%(host)s is %(address)s, an address inside the studio's network; deliveries go there only to hosts "
            "named in %(setting)s"
        )
        % words
    )


def registration_refusal(host: str) -> str | None:
    """Why ``host`` cannot be registered, judged without looking it up (a web request never waits for DNS)."""
    host = host.lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        address: Address | None = ipaddress.ip_address("127.0.0.1")
    else:
        address = _numeric(host)
    if address is None or not _inside(address) or _allowed(host, address):
        return None
    return _refusal(host, address)


@dataclass(frozen=True)
class Answer:
    status: int
    text: str  # the start of the body


class DeliveryTimedOut(OSError):
    """The receiver did not give its whole answer within the attempt's deadline."""


def _cut(holder: list[socket.socket]) -> None:
    """Shut the connection's socket down at the deadline: a read blocked on it returns at once. The plain socket's
    shutdown, also under TLS, which would first try to close the TLS session over a receiver that does not read."""
    try:
        socket.socket.shutdown(holder[0], socket.SHUT_RDWR)
    except OSError:
        pass  # already closed


def post(url: str, body: bytes, headers: dict[str, str], *, deadline_s: float | None = None) -> Answer:
    """POST ``body`` to ``url`` from the worker, through the address checked here; no redirect is followed. The
    whole attempt (connect, TLS, request, the answer's headers and its start) ends by ``deadline_s``
    (``WEBHOOKS_DEADLINE_S``): a per-read timeout alone lets a receiver that sends a byte every few seconds hold the
    worker for ever. Raises DeliveryRefused (an address inside the network), DeliveryTimedOut, OSError (a name that
    does not resolve, a refused connection, TLS) or http.client's errors (a malformed answer)."""
    deadline_s = settings.WEBHOOKS_DEADLINE_S if deadline_s is None else deadline_s
    started = time.monotonic()
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise OSError(f"{host} could not be looked up ({exc.strerror})") from None
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in found]
    for address in addresses:
        if _inside(address) and not _allowed(host, address):
            raise DeliveryRefused(_refusal(host, address))
    left = deadline_s - (time.monotonic() - started)
    connection = socket.create_connection(
        (str(addresses[0]), port), timeout=max(0.01, min(settings.WEBHOOKS_CONNECT_TIMEOUT_S, left))
    )
    holder = [connection]
    timer = threading.Timer(max(0.0, deadline_s - (time.monotonic() - started)), _cut, args=(holder,))
    timer.daemon = True
    timer.start()
    try:
        connection.settimeout(settings.WEBHOOKS_READ_TIMEOUT_S)
        if parts.scheme == "https":
            context = ssl.create_default_context(cafile=certifi.where())
            holder[0] = context.wrap_socket(connection, server_hostname=host)
        client = http.client.HTTPConnection(host, port)
        client.sock = holder[0]
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        client.putrequest("POST", target, skip_host=True, skip_accept_encoding=True)
        for name, value in {**headers, "Host": parts.netloc, "Content-Length": str(len(body))}.items():
            client.putheader(name, value)
        client.endheaders(body)
        response = client.getresponse()
        text = response.read(4 * ANSWER_SHOWN).decode("utf-8", "replace")[:ANSWER_SHOWN]
        answer = Answer(status=response.status, text=text)
    except (OSError, http.client.HTTPException) as exc:
        if time.monotonic() - started >= deadline_s - 0.05:
            raise DeliveryTimedOut(
                f"no whole answer within {deadline_s:g} s (connection, headers and body together)"
            ) from None
        if isinstance(exc, socket.timeout):
            raise DeliveryTimedOut(f"nothing read for {settings.WEBHOOKS_READ_TIMEOUT_S:g} s") from None
        raise
    finally:
        timer.cancel()
        holder[0].close()
    if time.monotonic() - started >= deadline_s - 0.05:  # the cut ended a body early: not the receiver's answer
        raise DeliveryTimedOut(f"no whole answer within {deadline_s:g} s (connection, headers and body together)")
    return answer
