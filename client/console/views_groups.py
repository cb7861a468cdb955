"""Consumer groups: the list, one group's members, offsets and lag, and a reset to a moment.

The reset is two steps, as ``tslog groups reset-offsets`` without and with ``--execute``: the
confirmation page computes the plan and shows it; its form carries that plan's exact offsets,
signed with a key made when the console started (an HMAC), and the POST applies those offsets,
not a plan recomputed later (records appended in between would move it). The signature also
stops another site's page from posting a reset through an operator's browser. Both steps
need ``--allow-writes``.
"""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import parse_qsl

from starlette.responses import HTMLResponse

from tslog.client.aio import TopicPartition

from .groups import apply_reset, describe, lag_rows, now_ms, plan_reset
from .html import Markup, error_box, link, page, table, text, when
from .records import format_positions, parse_positions


def _html(console, title: str, *parts, status: int = 200) -> HTMLResponse:
    return HTMLResponse(page(title, *parts, read_only=not console.options.allow_writes),
                        status_code=status)


async def groups_page(request, console) -> HTMLResponse:
    listings = await console.admin.list_consumer_groups()
    rows = [(link(f"/groups/{g.group_id}", g.group_id), g.state, g.members) for g in listings]
    return _html(console, "Consumer groups", table(["group", "state", "members"], rows, "groups"))


async def group_page(request, console) -> HTMLResponse:
    group_id = request.path_params["group"]
    group, committed = await describe(console.admin, group_id)
    if group is None and not committed:
        raise ValueError(f"group {group_id!r} does not exist")
    rows = await lag_rows(console.admin, group, committed)
    now = now_ms()
    lag = table(["topic", "partition", "committed", "log end", "lag (records)", "lag (seconds)",
                 "member"],
                [(r.tp.topic, r.tp.partition, r.committed, r.log_end, r.lag,
                  r.lag_seconds(now), r.member) for r in rows], "lag")
    members = table(["member", "host", "client id", "epoch", "state", "assigned"],
                    [(m.member_id, m.client_host, m.client_id, m.member_epoch, m.state,
                      ", ".join(f"{tp.topic}-{tp.partition}" for tp in m.assigned))
                     for m in (group.members if group else ())], "members")
    state = group.state if group else "EMPTY"
    summary = (f"state {state}, epoch {group.group_epoch if group else -1}, "
               f"assignor {group.assignor if group else '-'}, "
               f"{len(group.members) if group else 0} members")
    topics = sorted({r.tp.topic for r in rows})
    return _html(console, f"Group {group_id}", summary, Markup("<h2>Offsets and lag</h2>"),
                 lag, Markup("<p class=note>lag in seconds: the age of the oldest record the "
                             "group has not consumed</p><h2>Members</h2>"), members,
                 _reset_form(console, group_id, topics))


def _reset_form(console, group_id: str, topics: list) -> Markup:
    if not console.options.allow_writes:
        return Markup("<p class=note>Resetting offsets needs a console started with "
                      "--allow-writes.</p>")
    choices = "".join(f"<option>{text(t)}</option>" for t in topics)
    return Markup(
        f'<h2>Reset to a moment</h2><form method=get action="/groups/{text(group_id)}/reset">'
        f'topic <select name=topic>{choices}</select> to <input name=to placeholder='
        f'"-15m, ISO-8601, earliest, latest"> <button>Show what would change</button></form>')


def _signature(console, group_id: str, topic: str, offsets: str) -> str:
    message = "\0".join([group_id, topic, offsets]).encode()
    return hmac.new(console.form_key, message, hashlib.sha256).hexdigest()


def _refused(console):
    return _html(console, "Write actions are off",
                 error_box("this console is read-only: start it with --allow-writes"),
                 status=403)


async def reset_confirm_page(request, console) -> HTMLResponse:
    if not console.options.allow_writes:
        return _refused(console)
    group_id = request.path_params["group"]
    topic, moment = request.query_params.get("topic"), request.query_params.get("to")
    if not topic or not moment:
        raise ValueError("give a topic and a moment (to=-15m, ISO-8601, earliest, latest)")
    plan = await plan_reset(console.admin, group_id, topic, moment)
    offsets = format_positions({p: new for p, _, new in plan.rows})
    rows = [(p, current, new, "" if current == new else "changes")
            for p, current, new in plan.rows]
    form = Markup(
        f'<form method=post action="/groups/{text(group_id)}/reset">'
        f'<input type=hidden name=topic value="{text(topic)}">'
        f'<input type=hidden name=offsets value="{text(offsets)}">'
        f'<input type=hidden name=signature '
        f'value="{_signature(console, group_id, topic, offsets)}">'
        f'<button id=apply>Apply exactly these offsets</button></form>')
    rule = (f"its {moment.strip().lower()} offset" if plan.moment_ms is None else
            f"its first record at or after {when(plan.moment_ms)}, or its log end")
    return _html(console, f"Reset group {group_id} on {topic} to {moment}?",
                 f"Each partition goes to {rule}. Nothing has changed yet: applying commits "
                 "exactly the new offsets below.",
                 table(["partition", "current", "new", ""], rows, "plan"), form)


async def reset_apply(request, console) -> HTMLResponse:
    if not console.options.allow_writes:
        return _refused(console)
    group_id = request.path_params["group"]
    # parse_qsl, not request.form(): Starlette's form parser needs python-multipart
    form = dict(parse_qsl((await request.body()).decode("utf-8", "replace")))
    topic, offsets = form.get("topic", ""), form.get("offsets", "")
    expected = _signature(console, group_id, topic, offsets)
    if not hmac.compare_digest(expected, form.get("signature", "")):
        return _html(console, "Reset refused", error_box(
            "this form was not made by this console (or it restarted since): open the "
            "confirmation page again"), status=403)
    plan = {TopicPartition(topic, p): o for p, o in parse_positions(offsets).items()}
    await apply_reset(console.admin, group_id, plan)
    rows = [(tp.partition, offset) for tp, offset in sorted(plan.items())]
    return _html(console, f"Group {group_id} reset on {topic}",
                 table(["partition", "committed now"], rows, "applied"),
                 link(f"/groups/{group_id}", "back to the group"))
