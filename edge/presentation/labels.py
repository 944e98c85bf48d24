"""Every user-facing label of the store manager's UI, in Chinese and English, in one place.

Owned by the presentation layer; used by :mod:`edge.presentation.text`, the Textual app
(:mod:`edge.tui`) and, later, the HQ console. Pure: no I/O beyond reading the environment for the
default language.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping

logger = logging.getLogger(__name__)

LANGS: tuple[str, ...] = ("zh", "en")

LABELS: dict[str, dict[str, str]] = {
    "summary": {"zh": "结论", "en": "Answer"},
    "confidence": {"zh": "置信度", "en": "Confidence"},
    "interpretation": {"zh": "解读", "en": "Read as"},
    "note": {"zh": "注意", "en": "Note"},
    "low_confidence": {
        "zh": "⚠ 置信度低：证据不足，结论仅供参考",
        "en": "⚠ LOW CONFIDENCE: weak evidence, treat this result as tentative",
    },
    "status": {"zh": "状态", "en": "Status"},
    "status.ok": {"zh": "已计算", "en": "computed"},
    "status.insufficient_data": {
        "zh": "数据不足：记忆中的数据还不够回答这个问题",
        "en": "insufficient data: the memory does not hold enough data to answer this yet",
    },
    "status.refused": {
        "zh": "拒绝：引擎不做这种推断（例如外推预测）",
        "en": "refused: the engine does not do this (e.g. extrapolating a forecast)",
    },
    "status.unsupported": {
        "zh": "无法理解：这个问题无法映射为分析计划",
        "en": "unsupported: the question could not be mapped onto an analysis plan",
    },
    "missing": {"zh": "需要补充的数据", "en": "Data that would settle it"},
    "result": {"zh": "数值", "en": "Numbers"},
    "action": {"zh": "建议动作", "en": "Action"},
    "action.recommendation": {"zh": "建议", "en": "recommendation"},
    "action.work_order": {"zh": "工单", "en": "work order"},
    "action.alert": {"zh": "告警", "en": "alert"},
    "evidence": {"zh": "证据", "en": "Evidence"},
    "evidence_count": {"zh": "计算所用事件数", "en": "events behind the result"},
    "evidence_more": {"zh": "还有 {n} 条", "en": "{n} more"},
    "operator": {"zh": "算子", "en": "Operator"},
    "elapsed": {"zh": "耗时", "en": "Elapsed"},
    "none": {"zh": "无", "en": "none"},
    # result keys
    "value": {"zh": "数值", "en": "value"},
    "n": {"zh": "样本数", "en": "n"},
    "bucket": {"zh": "时间段", "en": "bucket"},
    "partial": {"zh": "不完整", "en": "partial"},
    "key": {"zh": "分组", "en": "group"},
    "share": {"zh": "占比", "en": "share"},
    "expected": {"zh": "预期", "en": "expected"},
    "score": {"zh": "分数", "en": "score"},
    "direction": {"zh": "方向", "en": "direction"},
    "a": {"zh": "A", "en": "A"},
    "b": {"zh": "B", "en": "B"},
    "count": {"zh": "次数", "en": "count"},
    "support": {"zh": "支持度", "en": "support"},
    "lift": {"zh": "提升度", "en": "lift"},
    "event_id": {"zh": "事件ID", "en": "event id"},
    "timestamp": {"zh": "时间", "en": "time"},
    "event_type": {"zh": "类型", "en": "type"},
    "raw_ref": {"zh": "媒体位置", "en": "media"},
    "role": {"zh": "角色", "en": "role"},
    "weight": {"zh": "权重", "en": "weight"},
    "item": {"zh": "项", "en": "item"},
    "slope_per_bucket": {"zh": "每段斜率", "en": "slope per bucket"},
    "p_value": {"zh": "p 值", "en": "p-value"},
    "start_value": {"zh": "起始值", "en": "start value"},
    "end_value": {"zh": "结束值", "en": "end value"},
    "change_pct": {"zh": "变化 %", "en": "change %"},
    "shift_hours": {"zh": "偏移小时", "en": "shift (hours)"},
    "diff_pct": {"zh": "差异 %", "en": "difference %"},
    "test": {"zh": "检验", "en": "test"},
    "significant": {"zh": "显著", "en": "significant"},
    "per": {"zh": "口径", "en": "per"},
    "method": {"zh": "方法", "en": "method"},
    "period": {"zh": "周期", "en": "period"},
    "period_unit": {"zh": "周期单位", "en": "period unit"},
    "strength": {"zh": "强度", "en": "strength"},
    "window_seconds": {"zh": "窗口秒数", "en": "window (s)"},
    "top_contributor": {"zh": "最大贡献", "en": "top contributor"},
    "r": {"zh": "相关系数 r", "en": "r"},
    "spearman_r": {"zh": "斯皮尔曼相关系数", "en": "Spearman's rank correlation"},
    "spearman_p": {"zh": "斯皮尔曼 p 值", "en": "Spearman's p-value"},
    "effect_pct": {"zh": "效应 %", "en": "effect %"},
    "runner_up": {"zh": "第二名", "en": "runner-up"},
    # statistical tests, in words (the payload keeps scipy's names)
    "test.ttest_ind": {"zh": "韦尔奇 t 检验（逐日数值）", "en": "Welch's t-test (daily values)"},
    "test.ttest_ind_from_stats": {"zh": "韦尔奇 t 检验（汇总统计）", "en": "Welch's t-test (from summaries)"},
    "test.chi2_contingency": {"zh": "卡方检验", "en": "chi-square test"},
    "test.mannwhitneyu": {"zh": "秩和检验", "en": "rank-sum test"},
    "test.binomial": {"zh": "二项检验", "en": "binomial test"},
    "yes": {"zh": "是", "en": "yes"},
    "direction.up": {"zh": "上升", "en": "up"},
    "direction.down": {"zh": "下降", "en": "down"},
    "direction.flat": {"zh": "无显著变化", "en": "flat"},
    "direction.high": {"zh": "偏高", "en": "high"},
    "direction.low": {"zh": "偏低", "en": "low"},
    "period_unit.day": {"zh": "天", "en": "day"},
    "per.day": {"zh": "按天（日均）", "en": "per day (daily mean)"},
    "period_unit.hour": {"zh": "小时", "en": "hour"},
    "title": {"zh": "标题", "en": "title"},
    "action.title": {"zh": "标题", "en": "title"},
    "action.rule": {"zh": "规则", "en": "rule"},
    "action.role": {"zh": "负责人", "en": "role"},
    "action.when": {"zh": "条件", "en": "when"},
    "action.activity": {"zh": "活动", "en": "activity"},
    "action.items": {"zh": "商品", "en": "items"},
    "action.task": {"zh": "任务", "en": "task"},
    "action.shift": {"zh": "班次", "en": "shift"},
    "action.count": {"zh": "人数", "en": "count"},
    "action.dates": {"zh": "日期", "en": "dates"},
    "action.trigger": {"zh": "触发条件", "en": "trigger"},
    "action.severity": {"zh": "严重程度", "en": "severity"},
    # evidence roles (``group:...``, ``bucket:...``; ``hit``, ``matched``, ``window``)
    "role.group": {"zh": "分组", "en": "group"},
    "role.bucket": {"zh": "时间段", "en": "bucket"},
    "role.anomaly": {"zh": "异常", "en": "anomaly"},
    "role.metric": {"zh": "指标", "en": "metric"},
    "role.hit": {"zh": "命中", "en": "hit"},
    "role.matched": {"zh": "符合条件", "en": "matched"},
    "role.window": {"zh": "所问时段", "en": "asked window"},
    # values of action params
    "value.store_manager": {"zh": "店长", "en": "store manager"},
    "value.cashier": {"zh": "收银员", "en": "cashier"},
    "value.cleaner": {"zh": "保洁员", "en": "cleaner"},
    "value.shift_lead": {"zh": "值班主管", "en": "shift lead"},
    "value.trainer": {"zh": "培训师", "en": "trainer"},
    "value.evening": {"zh": "晚班", "en": "evening"},
    "value.morning": {"zh": "早班", "en": "morning"},
    "value.tasting": {"zh": "试吃/试饮", "en": "tasting"},
    "value.add_cashier": {"zh": "加派收银员", "en": "add a cashier"},
    "value.retraining": {"zh": "复训", "en": "retraining"},
    "value.open_checkout": {"zh": "加开收银台", "en": "open another checkout"},
    "value.high": {"zh": "高", "en": "high"},
    "value.queue_length": {"zh": "排队长度", "en": "queue length"},
    "no": {"zh": "否", "en": "no"},
    # app chrome
    "tab.ask": {"zh": "提问", "en": "Ask"},
    "tab.events": {"zh": "事件", "en": "Events"},
    "tab.learned": {"zh": "已学到", "en": "Learned"},
    "tab.actions": {"zh": "动作", "en": "Actions"},
    "tab.status": {"zh": "状态", "en": "Status"},
    "ask.placeholder": {
        "zh": "输入问题，例如：上个月周末的转化率比工作日高吗",
        "en": "Type a question, e.g. was conversion higher on weekends last month?",
    },
    "ask.empty": {
        "zh": "还没有回答。输入问题后回车。",
        "en": "No answer yet. Type a question and press Enter.",
    },
    "ask.thinking": {"zh": "正在计算…", "en": "Computing…"},
    "events.search": {"zh": "搜索（文本，可选）", "en": "search text (optional)"},
    "events.type": {"zh": "事件类型", "en": "event type"},
    "events.since": {"zh": "起始 年-月-日", "en": "since YYYY-MM-DD"},
    "events.until": {"zh": "截止 年-月-日", "en": "until YYYY-MM-DD"},
    "events.where": {"zh": "属性 名称=值", "en": "attribute key=value"},
    "events.total": {"zh": "共 {total} 条，显示 {shown} 条", "en": "{total} match, showing {shown}"},
    "detail": {"zh": "详情", "en": "Details"},
    "media": {"zh": "媒体位置", "en": "Media location"},
    "no_media": {"zh": "（无原始媒体）", "en": "(no raw media)"},
    "text": {"zh": "文本", "en": "text"},
    "stats": {"zh": "属性", "en": "stats"},
    "entities": {"zh": "实体", "en": "entities"},
    "tier": {"zh": "存储层", "en": "tier"},
    "tier.hot": {"zh": "热", "en": "hot"},
    "tier.warm": {"zh": "温", "en": "warm"},
    "tier.cold": {"zh": "冷", "en": "cold"},
    "fact.statement": {"zh": "结论", "en": "statement"},
    "fact.kind": {"zh": "类别", "en": "kind"},
    "fact.updated": {"zh": "更新于", "en": "updated"},
    "fact.state": {"zh": "状态", "en": "state"},
    "fact.current": {"zh": "成立", "en": "holds"},
    "fact.closed": {"zh": "已失效", "en": "closed"},
    "fact.valid": {"zh": "有效期", "en": "valid"},
    "fact.evidence": {"zh": "证据数", "en": "evidence"},
    "fact.until_now": {"zh": "至今", "en": "now"},
    "facts.closed_shown": {"zh": "显示已失效的结论", "en": "Showing closed facts too"},
    "facts.closed_hidden": {"zh": "只显示成立的结论", "en": "Showing current facts only"},
    "facts.empty": {
        "zh": "还没有学到的结论。结论由维护任务得出：运行 adamm maintain（或常驻的 adamm run）后出现在这里。",
        "en": "Nothing learned yet. Facts come from maintenance: they appear here after adamm maintain "
        "(or a running adamm run) has checked the memory.",
    },
    "action.state": {"zh": "状态", "en": "state"},
    "action.type": {"zh": "类型", "en": "type"},
    "action.issued": {"zh": "发出于", "en": "issued"},
    "action.by": {"zh": "确认人", "en": "by"},
    "action.effect": {"zh": "效果", "en": "effect"},
    "action.effect_of": {"zh": "效果", "en": "Effect"},
    "actions.empty": {
        "zh": "还没有动作。在提问页按 F7 把回答发给某个岗位，它就会列在这里。",
        "en": "No actions yet. Press F7 on an answer in the Ask tab to send it to a role; it is listed here.",
    },
    "state.pending": {"zh": "待发送", "en": "pending"},
    "state.sent": {"zh": "已发送", "en": "sent"},
    "state.expired": {"zh": "已过期", "en": "expired"},
    "state.accepted": {"zh": "已接受", "en": "accepted"},
    "state.done": {"zh": "已完成", "en": "done"},
    "state.rejected": {"zh": "已拒绝", "en": "rejected"},
    "status.components": {"zh": "组件", "en": "Components"},
    "status.daemon_down": {
        "zh": "守护进程未运行：没有组件状态（用 adamm run --config 配置文件 启动）",
        "en": "daemon not running: no component status (start it with adamm run --config FILE)",
    },
    "status.daemon_stale": {
        "zh": "守护进程未运行：组件状态已 {age} 秒未更新",
        "en": "daemon not running: component status not updated for {age} s",
    },
    "status.outbox": {"zh": "待同步消息", "en": "Outbox (pending sync)"},
    "status.tiers": {"zh": "存储层事件数", "en": "Events per tier"},
    "status.dropped": {"zh": "丢帧", "en": "dropped frames"},
    "comp.name": {"zh": "名称", "en": "name"},
    # component kinds and states, as the Status tab lists them
    "comp.kind.camera": {"zh": "摄像头", "en": "camera"},
    "comp.kind.microphone": {"zh": "麦克风", "en": "microphone"},
    "comp.kind.pos": {"zh": "收银数据", "en": "point of sale"},
    "comp.kind.sync": {"zh": "同步", "en": "sync"},
    "comp.kind.maintain": {"zh": "维护", "en": "maintenance"},
    "comp.kind.rtsp": {"zh": "视频流", "en": "video stream"},
    "comp.state.running": {"zh": "运行中", "en": "running"},
    "comp.state.starting": {"zh": "启动中", "en": "starting"},
    "comp.state.waiting": {"zh": "等待中", "en": "waiting"},
    "comp.state.reconnecting": {"zh": "重连中", "en": "reconnecting"},
    "comp.state.stopped": {"zh": "已停止", "en": "stopped"},
    "comp.state.ended": {"zh": "已结束", "en": "ended"},
    "comp.state.error": {"zh": "出错", "en": "error"},
    "comp.state.failed": {"zh": "失败", "en": "failed"},
    "comp.kind": {"zh": "类别", "en": "kind"},
    "comp.state": {"zh": "状态", "en": "state"},
    "comp.provider": {"zh": "提供者", "en": "provider"},
    "comp.detail": {"zh": "详情", "en": "detail"},
    "comp.updated": {"zh": "更新于", "en": "updated"},
    "bind.ask": {"zh": "提问", "en": "Ask"},
    "bind.events": {"zh": "事件", "en": "Events"},
    "bind.learned": {"zh": "已学到", "en": "Learned"},
    "bind.closed_facts": {"zh": "已失效", "en": "Closed facts"},
    "bind.actions": {"zh": "动作", "en": "Actions"},
    "bind.status": {"zh": "状态", "en": "Status"},
    "bind.save": {"zh": "保存JSON", "en": "Save JSON"},
    "bind.quit": {"zh": "退出", "en": "Quit"},
    "bind.sort": {"zh": "排序", "en": "Sort"},
    "bind.refresh": {"zh": "刷新", "en": "Refresh"},
    "bind.accept": {"zh": "接受", "en": "Accept"},
    "bind.done": {"zh": "完成", "en": "Done"},
    "bind.reject": {"zh": "拒绝", "en": "Reject"},
    "saved": {"zh": "已保存到 {path}", "en": "Saved to {path}"},
    "nothing_to_save": {"zh": "还没有回答可保存", "en": "No answer to save yet"},
    "bind.propose": {"zh": "发送为动作", "en": "Send as action"},
    "proposed": {
        "zh": "动作 {id} 已排队发给{role}（由同步进程发送）",
        "en": "Action {id} queued for {role} (the sync worker sends it)",
    },
    "role.prompt": {
        "zh": "发给哪个岗位？（如 cashier、cleaner；回车发送，Esc 取消）",
        "en": "Send to which role? (e.g. cashier, cleaner; Enter sends, Esc cancels)",
    },
    "role.bad": {
        "zh": "岗位名只能用字母、数字和 _ . : -",
        "en": "A role is letters, digits and _ . : - only",
    },
    "no_action": {"zh": "这个回答没有可存的动作", "en": "This answer has no action to save"},
    "acked": {"zh": "动作 {id} -> {state}", "en": "Action {id} -> {state}"},
    "error": {"zh": "出错：{msg}", "en": "Error: {msg}"},
    "bad_day": {
        "zh": "{what}「{text}」不是日期：请写成 年-月-日（如 2025-09-01）",
        "en": "{what} {text!r} is not a date; write YYYY-MM-DD",
    },
    "bad_where": {
        "zh": "属性筛选「{text}」应写成 名称=值",
        "en": "attribute filter {text!r} must look like key=value",
    },
    "what.since": {"zh": "起始日期", "en": "since"},
    "what.until": {"zh": "截止日期", "en": "until"},
    "quit.hint": {"zh": "按 {keys} 退出", "en": "Press {keys} to quit"},
    "quit.title": {"zh": "要退出吗？", "en": "Quit?"},
    "bind.cancel": {"zh": "取消", "en": "Cancel"},
    "time.zone": {"zh": "{label}（{zone}）", "en": "{label} ({zone})"},
    "trend.partial": {"zh": "未结束", "en": "not over"},
    "plot.partial": {"zh": "未结束", "en": "not over"},
    "plot.x.bucket": {"zh": "时间段", "en": "bucket"},
    "plot.x.group": {"zh": "分组", "en": "group"},
}


def default_lang(environ: Mapping[str, str] | None = None) -> str:
    """``zh`` when LC_ALL / LC_MESSAGES / LANG (first set one) starts with ``zh``, else ``en``."""
    env = os.environ if environ is None else environ
    for var in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = env.get(var)
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


#: store time zones whose managers read Chinese (the TUI's default when the locale names no language)
ZH_ZONES = frozenset(
    {
        "Asia/Shanghai",
        "Asia/Chongqing",
        "Asia/Harbin",
        "Asia/Urumqi",
        "Asia/Hong_Kong",
        "Asia/Macau",
        "Asia/Taipei",
        "PRC",
    }
)


def ui_lang(lang: str | None, timezone: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """The app's one language: ``lang`` if given; else the locale when it names a language
    (``zh_CN.UTF-8``, ``en_US.UTF-8``); else the store's zone (a Chinese zone -> ``zh``); else ``en``."""
    if lang:
        return normalize_lang(lang)
    env = os.environ if environ is None else environ
    for var in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = (env.get(var) or "").strip()
        if value:
            code = value.split(".")[0].split("_")[0].lower()
            if code in ("c", "posix"):
                break  # no language named: fall back to the store
            return "zh" if code == "zh" else "en"
    return "zh" if timezone in ZH_ZONES else "en"


def normalize_lang(lang: str | None) -> str:
    """A supported language code; ``None`` means the locale default."""
    if lang is None:
        return default_lang()
    code = lang.lower()[:2]
    return code if code in LANGS else "en"


def t(key: str, lang: str, **fmt: object) -> str:
    """The label ``key`` in ``lang`` (English, then the key itself, as fallbacks)."""
    entry = LABELS.get(key)
    if entry is None:
        logger.debug("no label for %s", key)
        text = key
    else:
        text = entry.get(lang) or entry["en"]
    return text.format(**fmt) if fmt else text


def has_cjk(text: str) -> bool:
    """True when ``text`` contains CJK ideographs (used to guess a question's language)."""
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)
