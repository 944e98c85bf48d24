"""The optional LLM plan parser: an OpenAI-compatible chat endpoint under constrained decoding.

Owns the HTTP side of question parsing. ``adamm ask`` (and the hub's ask) use
:class:`LLMPlanParser` when ``[llm] enabled = true`` in the config; it asks the endpoint
(llama.cpp server, vLLM, Ollama ...) for a plan with the plan JSON Schema as ``response_format``
(``json_schema``, strict), validates the answer with :func:`edge.analysis.plan.validate_plan`,
and on any failure (HTTP error, timeout, unreadable or schema-invalid output) logs a warning with
the reason and returns the rule parser's result instead. So does a plan that puts a word the
memory holds in two fields (a zone and a product category both "premium") in a field neither the
question nor the measure's events pick (:func:`edge.analysis.parser.valuekeys.guessed_field`):
the rules read such a word the same way every time, or refuse it naming both fields. Standard
library HTTP only.
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import urllib.error
import urllib.request
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from edge.analysis.parser import ParseResult, parse_question
from edge.analysis.parser.text import has_cjk, normalize
from edge.analysis.parser.valuekeys import guessed_field
from edge.analysis.parser.vocabmatch import Embed
from edge.analysis.plan import plan_schema, validate_plan
from edge.analysis.source import Vocabulary
from edge.config import LLMConfig
from edge.errors import AdammError, PlanError

logger = logging.getLogger(__name__)

__all__ = ["LLMPlanParser", "LLMReplyError", "build_messages", "build_request_body"]

#: at most this many values per stats key go into the prompt
_VALUES_PER_KEY = 30


class LLMReplyError(AdammError):
    """The LLM endpoint answered, but not with a usable plan (the rule parser takes over)."""

    exit_code = 3


def _local_now(now: datetime, tz: str) -> datetime:
    try:
        zone = ZoneInfo(tz)
    except Exception:
        zone = ZoneInfo("UTC")
    return now.replace(tzinfo=zone) if now.tzinfo is None else now.astimezone(zone)


def build_messages(question: str, vocab: Vocabulary, now: datetime) -> list[dict[str, str]]:
    """The chat messages: the schema, the store's vocabulary, now and the time zone, then the question."""
    local = _local_now(now, vocab.timezone)
    vocabulary = {
        "timezone": vocab.timezone,
        "store_ids": list(vocab.store_ids),
        "event_types": list(vocab.event_types),
        "attributes": {k: list(v)[:_VALUES_PER_KEY] for k, v in vocab.attributes.items()},
        "entities": list(vocab.entities)[:100],
    }
    system = (
        "You translate a store manager's question (Chinese or English) into an analysis plan: one JSON "
        "object valid under the JSON Schema below, and nothing else.\n"
        "Rules: use only the metric, dimension and intent names of the schema. Relative times count back "
        f"from now = {local.isoformat()} (store time zone {vocab.timezone}): 'last/past N units' is "
        "filters.time_range.last as an ISO 8601 duration (P3M, P8W, P30D); calendar ranges (last week, "
        "yesterday, a date) are since/until RFC 3339 date-times with the store's UTC offset, until "
        "exclusive. Hours and weekdays are store-local (days_of_week 0 = Monday). Stats values, event types, "
        "store ids and entities must be taken from the vocabulary below; co_occurrence pairs are event "
        "types or key=value. Set language to zh or en (the question's language).\n"
        f"JSON Schema:\n{json.dumps(plan_schema(), ensure_ascii=False)}\n"
        f"Vocabulary of this store's memory:\n{json.dumps(vocabulary, ensure_ascii=False)}"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": question}]


def build_request_body(config: LLMConfig, question: str, vocab: Vocabulary, now: datetime) -> dict[str, Any]:
    """The chat-completions request body, with the plan schema as a strict json_schema response format."""
    return {
        "model": config.model,
        "messages": build_messages(question, vocab, now),
        "temperature": 0,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "plan", "schema": plan_schema(), "strict": True},
        },
    }


def _extract_plan(reply: Any) -> dict[str, Any]:
    try:
        content = reply["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise LLMReplyError("the reply has no choices[0].message.content") from None
    if isinstance(content, dict):
        plan = content
    else:
        if not isinstance(content, str):
            raise LLMReplyError("the reply content is not text")
        text = content.strip()
        fenced = re.fullmatch(r"```(?:json)?\s*(.*?)\s*```", text, flags=re.S)
        if fenced:
            text = fenced.group(1)
        try:
            plan = json.loads(text)
        except json.JSONDecodeError as exc:
            raise LLMReplyError(f"the reply is not JSON ({exc.msg} at {exc.pos})") from None
    if not isinstance(plan, dict):
        raise LLMReplyError("the reply is not a JSON object")
    return plan


class LLMPlanParser:
    """Plan parser backed by an OpenAI-compatible endpoint; the rule parser is the fallback."""

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self.url = config.endpoint.rstrip("/") + "/chat/completions"

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = os.environ.get(self.config.api_key_env) if self.config.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def request_plan(self, question: str, vocab: Vocabulary, now: datetime) -> dict[str, Any]:
        """Ask the endpoint once; the parsed, schema-valid plan or :class:`LLMReplyError`."""
        body = json.dumps(build_request_body(self.config, question, vocab, now), ensure_ascii=False).encode()
        req = urllib.request.Request(self.url, data=body, headers=self._headers(), method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.config.timeout_s) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            raise LLMReplyError(f"HTTP {exc.code} from {self.url}") from None
        except TimeoutError:
            raise LLMReplyError(f"no answer from {self.url} within {self.config.timeout_s:g} s") from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, TimeoutError | socket.timeout):
                raise LLMReplyError(f"no answer from {self.url} within {self.config.timeout_s:g} s") from None
            raise LLMReplyError(f"cannot reach {self.url}: {reason}") from None
        except OSError as exc:
            raise LLMReplyError(f"connection to {self.url} failed: {exc}") from None
        try:
            reply = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise LLMReplyError("the endpoint's response body is not JSON") from None
        plan = _extract_plan(reply)
        lang = "zh" if has_cjk(question) else "en"
        plan.setdefault("language", lang)
        try:
            validate_plan(plan)
        except PlanError as exc:
            raise LLMReplyError(exc.message) from None
        return plan

    def parse(
        self,
        question: str,
        vocab: Vocabulary,
        now: datetime,
        *,
        embed: Embed | None = None,
        similarity_threshold: float | None = None,
    ) -> ParseResult:
        """The LLM's plan (``backend="llm"``), or the rule parser's result when anything goes wrong
        or the plan guesses the field of a word of two fields.

        ``embed`` and ``similarity_threshold`` are the rule parser's (its embedding matcher): the
        fallback gets the same settings as a rule-only ask."""
        try:
            plan = self.request_plan(question, vocab, now)
        except LLMReplyError as exc:
            logger.warning("LLM plan parser failed, using the rule parser instead: %s", exc.message)
            return self._rules(question, vocab, now, embed, similarity_threshold)
        guess = guessed_field(normalize(question), plan, vocab)
        if guess is not None:
            # a word the memory holds in two fields, put in one the question and the measure's
            # events do not pick: the rules resolve it the same way every time, or refuse it
            logger.warning(
                "LLM plan reads %r as %s, which neither the question nor the measure decides; "
                "using the rule parser instead",
                guess.phrase,
                " or ".join(guess.keys),
            )
            return self._rules(question, vocab, now, embed, similarity_threshold)
        lang = str(plan.get("language") or ("zh" if has_cjk(question) else "en"))
        return ParseResult(plan=plan, status="ok", explanation=None, language=lang, backend="llm")

    @staticmethod
    def _rules(
        question: str,
        vocab: Vocabulary,
        now: datetime,
        embed: Embed | None,
        similarity_threshold: float | None,
    ) -> ParseResult:
        if similarity_threshold is None:
            return parse_question(question, vocab, now, embed=embed)
        return parse_question(question, vocab, now, embed=embed, similarity_threshold=similarity_threshold)
