"""Live events over WebSockets: presence (who has which trace open), review and submit events, lease release.

A socket needs a logged-in user and joins one group per project the user belongs to (or the one project it
asks for, if a member); events reach it only through those groups (annotation.events sends them).

A refused message is answered with one frame shape, studio.errors.error_frame: ``{"type": "error", "detail": ...,
"kind": ...}`` (the API's error body with a type), and the socket stays open.
"""

from __future__ import annotations

from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.utils import translation
from django.utils.translation import gettext

from annotation import events
from annotation.review.selectors import presence_snapshot
from annotation.services import lease_release_by
from studio.access import NotInScope
from studio.errors import Invalid, StudioError, error_frame
from studio.i18n import socket_language
from studio.inputs import id_from_text
from traces.access import projects_for
from traces.models import Trace

CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_INVALID = 4400


class LiveConsumer(AsyncJsonWebsocketConsumer):
    language = ""

    async def dispatch(self, message):
        # Every frame's words in the language its page was read in (studio.i18n.socket_language), as an API answer's.
        if not self.language:
            self.language = await database_sync_to_async(socket_language)(self.scope)
        with translation.override(self.language):
            await super().dispatch(message)

    async def connect(self):
        self.user = self.scope.get("user")
        self.project_ids: list[int] = []
        self.open_trace: tuple[int, int] | None = None  # (project_id, trace_id) this page announced
        if self.user is None or not self.user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        raw_query = self.scope.get("query_string", b"")
        try:
            query = raw_query.decode("utf-8")
        except UnicodeDecodeError as exc:
            # A client may send raw bytes (browsers percent-encode). Refused with the error frame, then closed: a
            # close before the handshake is accepted reaches the client as a bare HTTP 403, which names nothing.
            await self.accept()
            await self._refuse(
                Invalid(gettext("the address's query string is not valid UTF-8 (byte %(byte)s)") % {"byte": exc.start})
            )
            await self.close(code=CLOSE_INVALID)
            return
        wanted = parse_qs(query).get("project", [None])[0]
        self.project_ids = await self._allowed_projects(wanted)
        if not self.project_ids:
            # No project whose presence this user may watch (an engineer, or an outsider naming a project):
            # refused, with or without ?project=, rather than an open socket that hears nothing.
            await self.close(code=CLOSE_FORBIDDEN)
            return
        self.gold_project_ids = await self._gold_seen_in()
        for group in self._groups():
            await self.channel_layer.group_add(group, self.channel_name)
        await self.accept()
        await self.send_json({"type": "hello", "projects": self.project_ids, "presence": await self._presence()})

    async def disconnect(self, code):
        await self._announce_closed()
        for group in self._groups():
            await self.channel_layer.group_discard(group, self.channel_name)

    async def receive(self, text_data=None, bytes_data=None, **kwargs):
        """A frame that is not JSON text is answered with an error frame; the socket stays open (the stock
        consumer raised, which dropped the connection)."""
        if text_data is None:
            await self._refuse(Invalid(gettext("messages are JSON text frames, not binary")))
            return
        try:
            content = await self.decode_json(text_data)
        except ValueError as exc:  # json.JSONDecodeError, or text the decoder cannot take
            await self._refuse(
                Invalid(gettext("messages are JSON objects; this one is not (%(problem)s)") % {"problem": exc})
            )
            return
        await self.receive_json(content, **kwargs)

    async def receive_json(self, content, **kwargs):
        kind = content.get("type") if isinstance(content, dict) else None
        if kind == "presence.open":
            await self._announce_open(content.get("trace_id"))
        elif kind == "presence.close":
            await self._announce_closed()
        elif kind == "presence.snapshot":
            await self.send_json({"type": "presence.snapshot", "presence": await self._presence()})
        elif kind == "lease.release":
            await self._release(content.get("lease_id"))
        else:
            await self._refuse(Invalid(gettext("unknown message type %(type)s") % {"type": repr(kind)}))

    async def studio_event(self, message):
        await self.send_json(message["event"])

    # --- helpers -------------------------------------------------------------------------------

    def _groups(self) -> list[str]:
        """Every project's group, and per project the gold group where the user may know which traces are gold, else
        the user's own member group (events.broadcast)."""
        gold = getattr(self, "gold_project_ids", [])
        return [events.project_group(p) for p in getattr(self, "project_ids", [])] + [
            events.gold_group(p) if p in gold else events.member_group(p, self.user.pk)
            for p in getattr(self, "project_ids", [])
        ]

    @database_sync_to_async
    def _gold_seen_in(self) -> list[int]:
        projects = projects_for(self.user, events.GOLD_SEEN_BY).filter(pk__in=self.project_ids)
        return list(projects.order_by("pk").values_list("pk", flat=True))

    async def _refuse(self, exc: StudioError) -> None:
        await self.send_json(error_frame(exc))

    @database_sync_to_async
    def _allowed_projects(self, wanted: str | None) -> list[int]:
        projects = projects_for(self.user, "presence.view")
        if wanted is not None:
            project_id = id_from_text(wanted)
            projects = projects.filter(pk=project_id) if project_id is not None else projects.none()
        return list(projects.order_by("pk").values_list("pk", flat=True))

    @database_sync_to_async
    def _presence(self) -> list[dict]:
        return presence_snapshot(self.project_ids, gold_seen_in=self.gold_project_ids)

    @database_sync_to_async
    def _trace_project(self, trace_id) -> int | None:
        if not isinstance(trace_id, int):
            return None
        return (
            Trace.objects.filter(pk=trace_id, project_id__in=self.project_ids)
            .values_list("project_id", flat=True)
            .first()
        )

    async def _announce_open(self, trace_id) -> None:
        project_id = await self._trace_project(trace_id)
        if project_id is None:
            await self._refuse(NotInScope("trace"))
            return
        await self._announce_closed()
        self.open_trace = (project_id, trace_id)
        await self.channel_layer.group_send(
            events.project_group(project_id),
            {
                "type": events.RELAY_TYPE,
                "event": events.presence_event(trace_id=trace_id, user=self.user.username, state="open"),
            },
        )

    async def _announce_closed(self) -> None:
        open_trace = getattr(self, "open_trace", None)
        if not open_trace:
            return
        project_id, trace_id = open_trace
        self.open_trace = None
        await self.channel_layer.group_send(
            events.project_group(project_id),
            {
                "type": events.RELAY_TYPE,
                "event": events.presence_event(trace_id=trace_id, user=self.user.username, state="closed"),
            },
        )

    @database_sync_to_async
    def _release_lease(self, lease_id) -> StudioError | None:
        if not isinstance(lease_id, int):
            return Invalid(gettext("lease_id must be a number"))
        try:
            # The one release path (a lead's live list: lease.manage); a released lease is answered unchanged.
            lease_release_by(actor=self.user, lease_id=lease_id, action="lease.manage")
        except StudioError as exc:  # AccessRefused, NotInScope, or any refusal of the service
            return exc
        return None

    async def _release(self, lease_id) -> None:
        problem = await self._release_lease(lease_id)
        if problem is not None:
            await self._refuse(problem)
