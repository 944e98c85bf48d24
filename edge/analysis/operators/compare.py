"""``compare``: a metric across values of one dimension or across labelled periods.

Groups are sorted by value, highest first; the first two are tested with a scipy.stats test that
fits the metric (Welch's t on daily values, or from summary statistics: the bill totals' count,
mean and variance for order value, per-event moments for dwell and queue; chi-square on
proportions). Additive metrics are compared per store-local day (``per: "day"``). Registered in
the registry; called by the engine.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from edge.analysis import metrics as M
from edge.analysis import stats_fast
from edge.analysis.honesty import say
from edge.analysis.operators import _words as W
from edge.analysis.operators._grouped import peak_hour_per_hour
from edge.analysis.operators.base import (
    Context,
    EvidenceSpec,
    Operator,
    Outcome,
    fmt,
    fmt_p,
    insufficient,
    key_text,
    metric_types_filter,
    safe_float,
    same_key,
)
from edge.analysis.plan import resolve_time_range
from edge.analysis.source import EventFilter, Period

logger = logging.getLogger(__name__)


class _Grouping:
    """How raw key values map onto the compared groups."""

    def __init__(
        self,
        key: str,
        flt: EventFilter,
        label_of: Callable[[Any], Any | None],
        periods: tuple[Period, ...] = (),
        explicit: bool = False,
    ) -> None:
        self.key = key
        self.flt = flt
        self.label_of = label_of
        self.periods = periods
        self.explicit = explicit
        self.raw: dict[str, list[Any]] = {}

    def label(self, raw: Any) -> Any | None:
        if raw is None:
            return None
        lab = self.label_of(raw)
        if lab is not None:
            self.raw.setdefault(key_text(lab), [])
            if raw not in self.raw[key_text(lab)]:
                self.raw[key_text(lab)].append(raw)
        return lab


class CompareOperator(Operator):
    name = "compare"
    intent = "compare"
    version = "1.1"
    description = (
        "compare a metric across dimension values or periods; additive metrics per local day; "
        "Welch t-test (daily values; bill totals' and per-event summary stats) or chi-square for proportions"
    )
    output_keys = ("groups", "diff_pct", "p_value", "test", "significant", "per")
    group_keys = None
    min_evidence = {"events_per_group": "min_events_per_group (default 30)"}
    default_params = {"alpha": 0.05, "dimension": "weather"}
    confidence_method = (
        "n/(n+decay_base), n = the smaller of the two compared groups; capped at 0.5 when p >= 0.05"
    )
    templates = {
        "zh": "{metric}：{a} {va}，{b} {vb}，{rel}（{test}，p={p}，n={na} 对 {nb}）{sig}。",
        "en": "{metric}: {a} {va} vs {b} {vb}, {rel} ({test}, p={p}, n={na} vs {nb}){sig}.",
        "zh_period": "{metric}从{early}到{late}{move}：{ve} → {vl}（{rel}；{test}，p={p}，n={ne} 对 {nl}）{sig}。",
        "en_period": "{metric} went {move} from {early} to {late}: {ve} -> {vl} ({rel}; {test}, p={p}, "
        "n={ne} vs {nl}){sig}.",
    }

    # -- grouping ----------------------------------------------------------------------------------

    def _grouping(self, ctx: Context) -> _Grouping:
        cmp = ctx.plan.get("compare") or {}
        if cmp.get("periods"):
            periods = []
            for p in cmp["periods"]:
                since, until = resolve_time_range(
                    p.get("time_range"), ctx.now, ctx.timezone, wall_clock=ctx.flt.wall_clock_zone is not None
                )
                periods.append(Period(str(p["label"]), since, until))
            labels = {p.label for p in periods}
            return _Grouping(
                "period", ctx.flt, lambda v: v if v in labels else None, tuple(periods), explicit=True
            )
        groupby = ctx.plan.get("group_by") or []
        dim = str(cmp.get("dimension") or (groupby[0] if groupby else "weather"))
        groups = list(cmp.get("groups") or [])
        if dim == "hour" and not groups and ctx.flt.hours:
            hours = sorted(set(ctx.flt.hours))
            inside = (
                f"{hours[0]}-{hours[-1] + 1}h"
                if hours == list(range(hours[0], hours[-1] + 1))
                else (",".join(str(h) for h in hours) + "h")
            )
            outside = "other_hours"
            return _Grouping(
                "hour",
                ctx.flt.narrowed(hours=()),
                lambda v: inside if int(v) in hours else outside,
                explicit=True,
            )
        if groups:
            flt = ctx.flt.narrowed(key_equals=(*ctx.flt.key_equals, (dim, tuple(groups))))

            def label_of(v: Any) -> Any | None:
                for g in groups:
                    if same_key(g, v):
                        return g
                return None

            return _Grouping(dim, flt, label_of, explicit=True)
        return _Grouping(dim, ctx.flt, lambda v: v)

    # -- compute -----------------------------------------------------------------------------------

    def compute(self, ctx: Context) -> Outcome:
        within = self._within_key(ctx)
        if within is not None:
            return self._within(ctx, within)
        metric = ctx.metric or "event_count"
        g = self._grouping(ctx)
        comps = M.components(metric)
        key = g.key
        totals: dict[str, dict[str, float]] = {}
        labels: dict[str, Any] = {}
        by_hour: dict[str, dict[int, float]] = {}
        if key == "hour" and ((ctx.plan.get("compare") or {}).get("groups") or not ctx.flt.hours):
            refused = peak_hour_per_hour(ctx, metric, [key])  # only hours against other hours
            if refused is not None:
                return refused
        keys = [key, "hour"] if metric == "peak_hour" and key != "hour" else [key]
        for r in ctx.rows(keys, comps, g.flt, g.periods):
            lab = g.label(r[key])
            if lab is None:
                continue
            t = key_text(lab)
            labels[t] = lab
            M.add(totals.setdefault(t, {}), r)
            if metric == "peak_hour" and r["hour"] is not None:
                bh = by_hour.setdefault(t, {})
                bh[int(r["hour"])] = bh.get(int(r["hour"]), 0.0) + float(r["footfall"])
        daily: dict[str, list[float]] = {}
        if metric in M.ADDITIVE or metric == "conversion_rate":
            per_day: dict[tuple[str, Any], dict[str, float]] = {}
            for r in ctx.rows([key, "date"], comps, g.flt, g.periods):
                lab = g.label(r[key])
                if lab is None:
                    continue
                M.add(per_day.setdefault((key_text(lab), r["date"]), {}), r)
            for (t, _d), c in sorted(per_day.items(), key=lambda kv: str(kv[0])):
                v = M.value(metric, c)
                if v is not None:
                    daily.setdefault(t, []).append(v)
        groups: list[dict[str, Any]] = []
        for t, c in totals.items():
            n = M.n_of(metric, c)
            if metric == "peak_hour":
                v = M.peak_hour_of(by_hour.get(t, {}))
            elif metric in M.ADDITIVE:
                days = daily.get(t, [])
                v = float(np.mean(days)) if days else None
            else:
                v = M.value(metric, c)
            if v is not None:
                groups.append({"key": labels[t], "value": round(float(v), 4), "n": n, "_t": t})
        need = ctx.config.min_events_per_group
        if not g.explicit:
            groups = [x for x in groups if x["n"] >= need]
        thin = [x for x in groups if x["n"] < need]
        present = {x["_t"] for x in groups}
        wanted = self._wanted(ctx, g)
        absent = [w for w in wanted if w not in present]
        if thin or absent or len(groups) < 2:
            missing = [
                say(
                    ctx.language,
                    f"at least {need} events behind {metric} for {key}={w} (found 0)",
                    f"{W.side_label(f'{key}={w}', 'zh')}至少 {need} 条{M.label(metric, 'zh')}相关事件（现有 0 条）",
                )
                for w in absent
            ]
            missing += [
                say(
                    ctx.language,
                    f"at least {need} events behind {metric} for {key}={x['_t']} (found {x['n']})",
                    W.side_label(f"{key}={x['_t']}", "zh")
                    + f"至少 {need} 条{M.label(metric, 'zh')}相关事件（现有 {x['n']} 条）",
                )
                for x in thin
            ]
            if not missing:
                missing = [
                    say(
                        ctx.language,
                        f"at least two {key} groups with {need}+ events behind {metric}",
                        f"至少两个{W.dimension_label(key, 'zh')}分组、每组 {need} 条以上{M.label(metric, 'zh')}相关事件",
                    )
                ]
            return insufficient(missing)
        groups.sort(key=lambda x: (-x["value"], x["_t"]))
        first, second = groups[0], groups[1]
        p, test = self._test(ctx, metric, g, first["_t"], second["_t"], totals, daily, by_hour)
        diff = (
            round((first["value"] - second["value"]) / abs(second["value"]) * 100, 4)
            if second["value"] != 0
            else None
        )
        result = {
            "groups": [{"key": x["key"], "value": x["value"], "n": x["n"]} for x in groups],
            "diff_pct": diff,
            "p_value": None if p is None else float(f"{p:.6g}"),
            "test": test,
            "significant": bool(p is not None and p < 0.05),
            "per": "day" if metric in M.ADDITIVE else None,
        }
        base = metric_types_filter(g.flt, metric)
        top_n = max(x["n"] for x in groups) or 1
        specs = []
        for x in groups[: ctx.config.evidence_cap]:
            if key == "period":
                per = next(pp for pp in g.periods if pp.label == x["_t"])
                f = base.narrowed(since=per.since, until=per.until)
            else:
                f = base.narrowed(key_equals=(*base.key_equals, (key, tuple(g.raw.get(x["_t"], [x["key"]])))))
            specs.append(EvidenceSpec(f"group:{x['_t']}", f, round(x["n"] / top_n, 4)))
        return Outcome(
            status="ok",
            result=result,
            n=min(first["n"], second["n"]),
            p_value=p,
            evidence=specs,
            evidence_count=sum(x["n"] for x in groups),
        )

    # -- within each group of another key ("which store's rainy-day order value rose most") -------

    @staticmethod
    def _within_key(ctx: Context) -> str | None:
        """``group_by`` naming a key other than the compared dimension (or periods): the
        comparison is made within each value of that key and ranked by its effect."""
        cmp = ctx.plan.get("compare") or {}
        dim = cmp.get("dimension")
        others = [k for k in ctx.plan.get("group_by") or [] if k not in (dim, "period")]
        if not (dim or cmp.get("periods")) or not others:
            return None
        return str(others[0])

    def _pair(self, ctx: Context, sub_plan: dict[str, Any]) -> tuple[str, str] | Outcome:
        """The two groups compared within each value: the two listed groups or periods, else the
        two the comparison over every value picks; more than two listed: not one effect to rank."""
        from dataclasses import replace

        cmp = ctx.plan.get("compare") or {}
        listed = [key_text(v) for v in cmp.get("groups") or []] or [
            str(p.get("label")) for p in cmp.get("periods") or []
        ]
        if len(listed) == 2:
            return listed[0], listed[1]
        if listed:
            return insufficient(
                [
                    say(
                        ctx.language,
                        f"two groups to compare within each {W.dimension_label(str(ctx.plan['group_by'][0]), 'en')} "
                        f"(the question lists {len(listed)}: {', '.join(listed)})",
                        f"在每个{W.dimension_label(str(ctx.plan['group_by'][0]), 'zh')}内对比的两个分组"
                        f"（问题列出了 {len(listed)} 个：{'、'.join(listed)}）",
                    )
                ]
            )
        overall = self.compute(replace(ctx, plan=sub_plan))
        if overall.status != "ok":
            return overall
        a, b = overall.result["groups"][:2]
        return key_text(a["key"]), key_text(b["key"])

    def _within(self, ctx: Context, by: str) -> Outcome:
        """The standard comparison of two groups (:meth:`_pair`) within each value of ``by``;
        ranked by ``effect_pct`` = (first - second) / |second| * 100, highest first. The result's
        contract keys are the top value's comparison; ``within`` lists the ranking."""
        from dataclasses import replace

        metric = ctx.metric or "event_count"
        sub_plan = {k: v for k, v in ctx.plan.items() if k != "group_by"}
        pair = self._pair(ctx, sub_plan)
        if isinstance(pair, Outcome):
            return pair
        first, second = pair
        cmp = ctx.plan["compare"]
        if cmp.get("dimension") and not cmp.get("groups"):  # the picked pair, compared alone
            sub_plan["compare"] = {**cmp, "groups": [first, second]}
        values = sorted({r[by] for r in ctx.rows([by], M.components(metric))}, key=key_text)
        ranked: list[tuple[float, Any, Outcome]] = []
        thin: list[str] = []
        for w in values:
            sub = replace(
                ctx, plan=sub_plan, flt=ctx.flt.narrowed(key_equals=(*ctx.flt.key_equals, (by, (w,))))
            )
            out = self.compute(sub)
            vals = {key_text(x["key"]): x for x in out.result.get("groups", [])}
            a, b = vals.get(first), vals.get(second)
            if out.status != "ok" or a is None or b is None or not b["value"]:
                thin.append(key_text(w))
                continue
            ranked.append((round((a["value"] - b["value"]) / abs(b["value"]) * 100, 4), w, out))
        if not ranked:
            return insufficient(
                [
                    say(
                        ctx.language,
                        f"for some {by}: at least {ctx.config.min_events_per_group} events behind {metric} "
                        f"in each of {first} and {second}",
                        f"至少一个{W.dimension_label(by, 'zh')}：{first} 与 {second} 各有 {ctx.config.min_events_per_group} 条以上"
                        f"{M.label(metric, 'zh')}相关事件",
                    )
                ]
            )
        ranked.sort(key=lambda t: (-t[0], key_text(t[1])))
        effect, top_key, top = ranked[0]
        result = dict(top.result)
        result["within"] = {
            "by": by,
            "first": first,
            "second": second,
            "items": [
                {
                    "key": w,
                    "effect_pct": e,
                    "p_value": o.result.get("p_value"),
                    "significant": o.result.get("significant"),
                    "n": o.n,
                }
                for e, w, o in ranked
            ],
            "left_out": thin,
        }
        return Outcome(
            status="ok",
            result=result,
            n=top.n,
            p_value=top.p_value,
            evidence=top.evidence,
            evidence_count=sum(o.evidence_count for _e, _w, o in ranked),
        )

    @staticmethod
    def _wanted(ctx: Context, g: _Grouping) -> list[str]:
        cmp = ctx.plan.get("compare") or {}
        if cmp.get("periods"):
            return [str(p["label"]) for p in cmp["periods"]]
        if g.key != "hour" or cmp.get("groups"):
            return [key_text(x) for x in cmp.get("groups") or []]
        return []

    def _test(
        self,
        ctx: Context,
        metric: str,
        g: _Grouping,
        a: str,
        b: str,
        totals: dict[str, dict[str, float]],
        daily: dict[str, list[float]],
        by_hour: dict[str, dict[int, float]],
    ) -> tuple[float | None, str]:
        try:
            if metric in M.ADDITIVE or metric == "conversion_rate":
                xa, xb = daily.get(a, []), daily.get(b, [])
                if len(xa) < 2 or len(xb) < 2:
                    return None, "ttest_ind"
                # Welch's t (= scipy.stats.ttest_ind(equal_var=False), without importing scipy.stats)
                return safe_float(stats_fast.welch(xa, xb).pvalue), "ttest_ind"
            if metric == "avg_order_value":
                # Welch's t from each group's bill count, mean and variance (bill totals' moments)
                acc: dict[str, tuple[int, float, float]] = {a: (0, 0.0, 0.0), b: (0, 0.0, 0.0)}
                for raw, (bn, bs, bq) in M.bill_moments(ctx.source, g.flt, g.key, g.periods).items():
                    lab = g.label(raw)
                    if lab is not None and key_text(lab) in acc:
                        n0, s0, q0 = acc[key_text(lab)]
                        acc[key_text(lab)] = (n0 + bn, s0 + bs, q0 + bq)
                if acc[a][0] < 2 or acc[b][0] < 2:
                    return None, "ttest_ind_from_stats"
                (ma, sa), (mb, sb) = M.mean_std(*acc[a]), M.mean_std(*acc[b])
                res = stats_fast.welch_from_stats(
                    ma, sa, acc[a][0], mb, sb, acc[b][0]
                )  # = ttest_ind_from_stats(equal_var=False)
                return safe_float(res.pvalue), "ttest_ind_from_stats"
            if metric in ("dwell_time", "queue_length"):
                ma_, mb_ = M.moments(totals[a], metric), M.moments(totals[b], metric)
                if ma_ is None or mb_ is None:
                    return None, "ttest_ind_from_stats"
                res = stats_fast.welch_from_stats(*ma_, *mb_)  # = ttest_ind_from_stats(equal_var=False)
                return safe_float(res.pvalue), "ttest_ind_from_stats"
            from scipy import stats  # chi-square only: imported when a proportion is compared

            if metric in M.PROPORTIONS:
                if metric == "staff_error_rate":
                    table = [
                        [totals[t].get("staff_error_n", 0), totals[t].get("staff_op_n", 0)] for t in (a, b)
                    ]
                else:
                    table = [
                        [
                            totals[t].get("negative_n", 0),
                            totals[t].get("emotion_n", 0) - totals[t].get("negative_n", 0),
                        ]
                        for t in (a, b)
                    ]
                arr = np.array(table, dtype=float)
                if (arr.sum(axis=0) == 0).any() or (arr.sum(axis=1) == 0).any():
                    return None, "chi2_contingency"
                return safe_float(stats.chi2_contingency(arr)[1]), "chi2_contingency"
            if metric == "peak_hour":
                hours = sorted(set(by_hour.get(a, {})) | set(by_hour.get(b, {})))
                arr = np.array([[by_hour.get(t, {}).get(h, 0.0) for h in hours] for t in (a, b)])
                arr = arr[:, arr.sum(axis=0) > 0]
                if arr.shape[1] < 2:
                    return None, "chi2_contingency"
                return safe_float(stats.chi2_contingency(arr)[1]), "chi2_contingency"
        except ValueError as exc:  # degenerate samples
            logger.info("compare test failed on %s: %s", metric, exc)
        return None, "none"

    @staticmethod
    def _chronological(ctx: Context) -> list[str]:
        """The compared periods' labels, earliest first (plan order where a range has no start)."""
        cmp = ctx.plan.get("compare") or {}
        starts: list[tuple[float, int, str]] = []
        for i, p in enumerate(cmp.get("periods") or []):
            try:
                since, _ = resolve_time_range(p.get("time_range"), ctx.now, ctx.timezone)
            except (ValueError, TypeError, KeyError):
                since = None
            starts.append((since.timestamp() if since is not None else float("-inf"), i, str(p.get("label"))))
        return [label for _, _, label in sorted(starts)]

    @staticmethod
    def _summarize_within(ctx: Context, result: Mapping[str, Any], metric: str, lang: str) -> str:
        w = result["within"]
        dim = str((ctx.plan.get("compare") or {}).get("dimension"))
        fa, fb = W.value_label(dim, w["first"], lang), W.value_label(dim, w["second"], lang)
        items = w["items"]
        label = M.label(metric, lang)
        by = w["by"]
        if lang == "zh":
            rank = "；".join(f"{W.keys_label([by], i['key'], lang)} {fmt(i['effect_pct'])}%" for i in items)
            return f"{fa}相对{fb}的{label}变化，按{W.dimension_label(by, 'zh')}排名：{rank}（最高：{W.keys_label([by], items[0]['key'], lang)}）。"
        rank = "; ".join(f"{W.keys_label([by], i['key'], lang)} {fmt(i['effect_pct'])}%" for i in items)
        return f"{label} with {fa} vs {fb}, change ranked by {by}: {rank} (largest: {W.keys_label([by], items[0]['key'], lang)})."

    @staticmethod
    def _relation(a: str, b: str, diff: float | None, lang: str) -> str:
        """``a`` against ``b`` in words: "rainy days 32.7% higher than sunny days" / "雨天比晴天高 32.7%"."""
        if diff is None:
            return (
                "差异无法计算（基准为 0）"
                if lang == "zh"
                else "the difference is not defined (the base is 0)"
            )
        if lang == "zh":
            return f"{a}比{b}{W.higher_lower(diff, lang)}"
        if round(float(diff), 1) == 0:
            return f"{a} about the same as {b}"
        return f"{a} {W.higher_lower(diff, lang)} than {b}"

    def summarize(self, ctx: Context, result: Mapping[str, Any]) -> str:
        metric = ctx.metric or "event_count"
        lang = "zh" if ctx.language == "zh" else "en"
        if "within" in result:
            return self._summarize_within(ctx, result, metric, lang)
        a, b = result["groups"][0], result["groups"][1]
        if result["p_value"] is None:
            sig = "，无法检验显著性" if lang == "zh" else "; significance could not be tested"
        elif result["significant"]:
            sig = "，差异显著" if lang == "zh" else "; the difference is significant"
        else:
            sig = "，差异不显著" if lang == "zh" else "; the difference is not significant"
        label = M.label(metric, lang)
        if result["per"] == "day":
            label += "（日均）" if lang == "zh" else " (mean per day)"
        cmp = ctx.plan.get("compare") or {}
        groupby = ctx.plan.get("group_by") or []
        dim = (
            "period"
            if cmp.get("periods")
            else str(cmp.get("dimension") or (groupby[0] if groupby else "weather"))
        )
        name_a, name_b = W.value_label(dim, a["key"], lang), W.value_label(dim, b["key"], lang)
        rel = self._relation(name_a, name_b, result["diff_pct"], lang)
        order = self._chronological(ctx) if dim == "period" else []
        ka, kb = key_text(a["key"]), key_text(b["key"])
        if ka in order and kb in order and ka != kb:
            early, late = (a, b) if order.index(ka) < order.index(kb) else (b, a)
            if late["value"] > early["value"]:
                move = "上升" if lang == "zh" else "up"
            elif late["value"] < early["value"]:
                move = "下降" if lang == "zh" else "down"
            else:
                move = "持平" if lang == "zh" else "neither up nor down"
            return self.templates[f"{lang}_period"].format(
                metric=label,
                early=W.value_label(dim, early["key"], lang),
                late=W.value_label(dim, late["key"], lang),
                move=move,
                ve=fmt(early["value"]),
                vl=fmt(late["value"]),
                rel=rel,
                test=W.test_label(result["test"], lang),
                p=fmt_p(result["p_value"]),
                ne=early["n"],
                nl=late["n"],
                sig=sig,
            )
        text = self.templates[lang].format(
            metric=label,
            a=name_a,
            va=fmt(a["value"]),
            b=name_b,
            vb=fmt(b["value"]),
            rel=rel,
            test=W.test_label(result["test"], lang),
            p=fmt_p(result["p_value"]),
            na=a["n"],
            nb=b["n"],
            sig=sig,
        )
        return text + self._asked_group(
            ctx.asked if not cmp.get("groups") else (), result["groups"], dim, lang
        )

    @staticmethod
    def _asked_group(asked: Sequence[str], groups: list[dict[str, Any]], dim: str, lang: str) -> str:
        """The one value a question named of a field compared over all its values ("is revenue higher
        on sunny days") when the two highest are others: its value, below both (or, with too few
        events to be compared, that it was not)."""
        if len(asked) != 1:
            return ""
        rank = next((i for i, g in enumerate(groups) if key_text(g["key"]) == asked[0]), None)
        name = W.value_label(dim, asked[0], lang)
        if rank is None:
            if lang == "zh":
                return f"所问的{name}事件太少，没有参与比较。"
            return f" {name[:1].upper() + name[1:]}, asked about: too few events to be compared."
        if rank < 2:
            return ""
        value = fmt(groups[rank]["value"])
        below = groups[rank]["value"] < groups[1]["value"]
        if lang == "zh":
            return f"所问的{name}为 {value}，{'低于这两组' if below else '与第二组持平'}。"
        return f" {name[:1].upper() + name[1:]}, asked about: {value}, {'lower than both' if below else 'level with the second'}."
