"""What a staff device shows of an action, in one language: words, local times, short ids.

Pure (no Textual, no network): used by the terminal app (:mod:`edge.staff.app`) and by the line
mode of ``adamm-staff`` (:mod:`edge.staff.cli`). Times are the device's local time (a staff device
stands in its store) with the zone said; action ids are shown by their first
:data:`SHORT_ID` characters (the JSON keeps them whole).
"""

from __future__ import annotations

from typing import Any

from edge.presentation.fit import wrap
from edge.presentation.format import zoned_time
from edge.presentation.labels import t
from edge.presentation.text import action_value

#: characters of an action id shown to a person
SHORT_ID = 8

LABELS: dict[str, dict[str, str]] = {
    "title": {"zh": "员工终端", "en": "staff device"},
    "waiting": {
        "zh": "正在等待发给「{role}」的动作（门店 {store}）。动作到达后会列在这里。",
        "en": "Waiting for actions for {role} at store {store}. They are listed here as they arrive.",
    },
    "col.id": {"zh": "编号", "en": "id"},
    "col.type": {"zh": "类型", "en": "type"},
    "col.title": {"zh": "标题", "en": "title"},
    "col.issued": {"zh": "发出于", "en": "issued"},
    "col.expires": {"zh": "到期", "en": "expires"},
    "col.state": {"zh": "状态", "en": "state"},
    "state.new": {"zh": "新", "en": "new"},
    "confidence": {"zh": "置信度", "en": "confidence"},
    "evidence": {"zh": "证据 {n} 条事件", "en": "evidence: {n} events"},
    "issued": {"zh": "发出于", "en": "issued"},
    "expires": {"zh": "到期", "en": "expires"},
    "never": {"zh": "不过期", "en": "does not expire"},
    "id": {"zh": "编号", "en": "id"},
    "did": {"zh": "动作 {id}：{state}", "en": "Action {id}: {state}"},
    "already": {"zh": "动作 {id} 已是「{state}」", "en": "Action {id} is already {state}"},
    "nothing": {"zh": "还没有动作可确认", "en": "No action to acknowledge yet"},
    "arrived": {"zh": "新动作 {id}：{title}", "en": "New action {id}: {title}"},
    "failed": {"zh": "出错：{msg}", "en": "Error: {msg}"},
    "bind.accept": {"zh": "接受", "en": "Accept"},
    "bind.done": {"zh": "完成", "en": "Done"},
    "bind.reject": {"zh": "拒绝", "en": "Reject"},
    "bind.quit": {"zh": "退出", "en": "Quit"},
    "prompt": {"zh": "[a]接受 [d]完成 [r]拒绝 [s]跳过", "en": "[a]ccept [d]one [r]eject [s]kip"},
    "prompt.accepted": {"zh": "[d]完成 [r]拒绝 [s]跳过", "en": "[d]one [r]eject [s]kip"},
    "prompt.again": {"zh": "请输入 a、d、r 或 s 后回车", "en": "type a, d, r or s and Enter"},
}


def st(key: str, lang: str, **fmt: object) -> str:
    """A staff device label in ``lang`` (English as the fallback)."""
    entry = LABELS[key]
    text = entry.get(lang) or entry["en"]
    return text.format(**fmt) if fmt else text


def local_zone() -> str | None:
    """The device's IANA zone (:func:`edge.presentation.format.machine_zone`)."""
    from edge.presentation.format import machine_zone

    return machine_zone()


def short_id(action_id: str) -> str:
    return action_id[:SHORT_ID]


def type_label(kind: str, lang: str) -> str:
    return t(f"action.{kind}", lang)


def state_label(state: str | None, lang: str) -> str:
    return st("state.new", lang) if not state else t(f"state.{state}", lang)


def title_of(a: dict[str, Any], lang: str) -> str:
    params = a.get("params") or {}
    title = params.get("title") or params.get("rule")
    return str(title) if title else type_label(str(a.get("type", "")), lang)


def action_lines(a: dict[str, Any], lang: str, zone: str | None = None, width: int = 76) -> list[str]:
    """An action as a person reads it: type and title, the summary (how the question was read,
    then the answer) wrapped at word boundaries, confidence and evidence, local times, short id."""
    zone = zone if zone is not None else local_zone()
    head = f"[{type_label(str(a.get('type', '')), lang)}] {title_of(a, lang)}"
    lines = wrap(head, width)
    lines += ["  " + x for x in wrap(str(a.get("summary", "")), width - 2)]
    role = action_value(a.get("role") or "", lang)
    evidence = st("evidence", lang, n=len(a.get("evidence") or []))
    lines.append(f"  {st('confidence', lang)} {float(a.get('confidence') or 0):.2f}, {evidence}")
    expires = zoned_time(a.get("expires_at"), zone) if a.get("expires_at") else st("never", lang)
    lines.append(
        f"  {st('issued', lang)} {zoned_time(a.get('issued_at'), zone)}, {st('expires', lang)} {expires}"
    )
    lines.append(
        f"  {st('id', lang)} {short_id(str(a.get('action_id', '')))}" + (f"  {role}" if role else "")
    )
    return lines
