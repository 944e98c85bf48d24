"""The optional LLM plan parser (edge.llm.LLMPlanParser) against a local HTTP stand-in.

The server started here on a free 127.0.0.1 port is a STAND-IN for an OpenAI-compatible chat
endpoint (llama.cpp server, vLLM, Ollama): it records each request and answers with what the
test scripts (a reply body, an HTTP status, or a delay). Real sockets and real HTTP; the only
thing not real is the model behind the endpoint.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from edge.analysis.parser import parse_question
from edge.analysis.plan import plan_schema
from edge.analysis.source import Vocabulary
from edge.config import LLMConfig
from edge.llm import LLMPlanParser

NOW = datetime(2025, 12, 15, 10, 0)
VOCAB = Vocabulary(
    timezone="Asia/Shanghai",
    store_ids=("sh_xuhui_01",),
    event_types=("customer_enter", "purchase", "customer_inquiry"),
    attributes={"weather": ("sunny", "rain"), "topic": ("high_margin_product", "price")},
)
QUESTION = "下雨天和晴天相比，哪种天气客单价更高？"


@dataclass
class Script:
    """What the stand-in answers next, and what it received."""

    status: int = 200
    content: Any = None  # the message content (a str is sent as is)
    raw_body: bytes | None = None  # overrides the whole response body
    delay_s: float = 0.0
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)


@pytest.fixture
def stand_in() -> Iterator[tuple[Script, str]]:
    script = Script()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            script.paths.append(self.path)
            script.headers.append(dict(self.headers.items()))
            script.requests.append(json.loads(body))
            if script.delay_s:
                time.sleep(script.delay_s)
            if script.raw_body is not None:
                out = script.raw_body
            else:
                content = script.content if isinstance(script.content, str) else json.dumps(script.content)
                out = json.dumps(
                    {
                        "id": "x",
                        "object": "chat.completion",
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
                    }
                ).encode()
            try:
                self.send_response(script.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                pass

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="llm-stand-in", daemon=True)
    thread.start()
    try:
        yield script, f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _parser(endpoint: str, timeout_s: float = 5.0) -> LLMPlanParser:
    return LLMPlanParser(
        LLMConfig(
            enabled=True,
            endpoint=endpoint,
            model="qwen-test",
            timeout_s=timeout_s,
            api_key_env="ADAMM_LLM_API_KEY",
        )
    )


GOOD_PLAN = {
    "intent": "compare",
    "target_metric": "avg_order_value",
    "compare": {"dimension": "weather", "groups": ["rain", "sunny"]},
    "language": "zh",
}


def test_schema_is_sent_as_response_format_and_valid_output_is_used(
    stand_in: tuple[Script, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    script, endpoint = stand_in
    script.content = GOOD_PLAN
    monkeypatch.setenv("ADAMM_LLM_API_KEY", "sk-local-test")
    result = _parser(endpoint).parse(QUESTION, VOCAB, NOW)

    assert result.backend == "llm" and result.status == "ok"
    assert result.plan == GOOD_PLAN
    assert result.language == "zh"
    assert script.paths == ["/v1/chat/completions"]
    req = script.requests[0]
    assert req["model"] == "qwen-test"
    rf = req["response_format"]
    assert rf["type"] == "json_schema"
    assert rf["json_schema"]["name"] == "plan"
    assert rf["json_schema"]["strict"] is True
    assert rf["json_schema"]["schema"] == plan_schema()
    system = req["messages"][0]
    assert system["role"] == "system"
    for needle in (
        "Asia/Shanghai",
        "2025-12-15T10:00:00+08:00",
        "high_margin_product",
        "sh_xuhui_01",
        '"intent"',
    ):
        assert needle in system["content"]
    assert req["messages"][-1] == {"role": "user", "content": QUESTION}
    assert script.headers[0].get("Authorization") == "Bearer sk-local-test"


def test_llm_plan_without_language_gets_the_question_language(stand_in: tuple[Script, str]) -> None:
    script, endpoint = stand_in
    script.content = {"intent": "aggregate", "target_metric": "footfall"}
    result = _parser(endpoint).parse("How many visitors yesterday?", VOCAB, NOW)
    assert result.backend == "llm"
    assert result.plan == {"intent": "aggregate", "target_metric": "footfall", "language": "en"}


def _assert_fell_back(result: Any, caplog: pytest.LogCaptureFixture, reason: str) -> None:
    expected = parse_question(QUESTION, VOCAB, NOW)
    assert result.backend == "rules"
    assert result.plan == expected.plan
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and r.name == "edge.llm"]
    assert warnings, "a fallback must log a warning"
    assert reason in warnings[-1].getMessage()


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("this is not json {", "not JSON"),
        ('["a", "list"]', "not a JSON object"),
        ({"intent": "guess"}, "intent"),
        ({"intent": "aggregate", "target_metric": "profit"}, "target_metric"),
        ({"intent": "aggregate", "unknown_key": 1}, "unknown_key"),
        ({"intent": "trend", "filters": {"time_range": {"since": "last tuesday"}}}, "since"),
    ],
    ids=["invalid-json", "not-object", "bad-intent", "bad-metric", "extra-key", "bad-date"],
)
def test_invalid_output_falls_back_to_rules(
    stand_in: tuple[Script, str], caplog: pytest.LogCaptureFixture, content: Any, reason: str
) -> None:
    script, endpoint = stand_in
    script.content = content
    with caplog.at_level(logging.WARNING, logger="edge.llm"):
        result = _parser(endpoint).parse(QUESTION, VOCAB, NOW)
    _assert_fell_back(result, caplog, reason)


def test_reply_without_choices_falls_back(
    stand_in: tuple[Script, str], caplog: pytest.LogCaptureFixture
) -> None:
    script, endpoint = stand_in
    script.raw_body = b'{"error": "model not loaded"}'
    with caplog.at_level(logging.WARNING, logger="edge.llm"):
        result = _parser(endpoint).parse(QUESTION, VOCAB, NOW)
    _assert_fell_back(result, caplog, "choices")


def test_fenced_json_is_accepted(stand_in: tuple[Script, str]) -> None:
    script, endpoint = stand_in
    script.content = "```json\n" + json.dumps(GOOD_PLAN) + "\n```"
    assert _parser(endpoint).parse(QUESTION, VOCAB, NOW).backend == "llm"


def test_http_500_falls_back(stand_in: tuple[Script, str], caplog: pytest.LogCaptureFixture) -> None:
    script, endpoint = stand_in
    script.status = 500
    script.raw_body = b'{"error": "internal"}'
    with caplog.at_level(logging.WARNING, logger="edge.llm"):
        result = _parser(endpoint).parse(QUESTION, VOCAB, NOW)
    _assert_fell_back(result, caplog, "HTTP 500")


def test_timeout_falls_back(stand_in: tuple[Script, str], caplog: pytest.LogCaptureFixture) -> None:
    script, endpoint = stand_in
    script.content = GOOD_PLAN
    script.delay_s = 1.5
    with caplog.at_level(logging.WARNING, logger="edge.llm"):
        result = _parser(endpoint, timeout_s=0.3).parse(QUESTION, VOCAB, NOW)
    _assert_fell_back(result, caplog, "within 0.3 s")


def test_unreachable_endpoint_falls_back(caplog: pytest.LogCaptureFixture) -> None:
    import socket

    with socket.socket() as s:  # a port that was free a moment ago and has nobody listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with caplog.at_level(logging.WARNING, logger="edge.llm"):
        result = _parser(f"http://127.0.0.1:{port}/v1", timeout_s=2).parse(QUESTION, VOCAB, NOW)
    _assert_fell_back(result, caplog, "cannot reach")


def test_fallback_keeps_the_embedding_matcher_and_threshold() -> None:
    """The rule parser that takes over gets the same embed and similarity threshold as a rule-only
    ask (it used to parse without them)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    asked: list[list[str]] = []

    def embed(texts: Any) -> None:
        asked.append(list(texts))
        return None  # no vectors: the parser must still answer, by rules

    result = _parser(f"http://127.0.0.1:{port}/v1", timeout_s=2).parse(
        QUESTION, VOCAB, NOW, embed=embed, similarity_threshold=0.9
    )
    assert result.backend != "llm" and asked, "the fallback did not use the embedding matcher"
    direct = parse_question(QUESTION, VOCAB, NOW, embed=embed, similarity_threshold=0.9)
    assert result.plan == direct.plan


# -- a word of two fields (a zone and a product category both "premium") ----------------------------

TWO_FIELDS = Vocabulary(
    timezone="Asia/Shanghai",
    store_ids=("sh_xuhui_01",),
    event_types=("purchase", "dwell"),
    attributes={"zone": ("premium", "entrance"), "product_category": ("premium", "bakery")},
    keys_by_type={"purchase": ("product_category",), "dwell": ("zone",)},
)


def _revenue_in(key: str) -> dict[str, Any]:
    return {
        "intent": "aggregate",
        "target_metric": "revenue",
        "filters": {"attributes": {key: "premium"}},
        "language": "en",
    }


@pytest.mark.parametrize(
    ("question", "key", "backend"),
    [
        # purchases carry product categories, not zones: the LLM's category is the rules' reading
        ("revenue from premium last month", "product_category", "llm"),
        # the question names the field beside the word
        ("revenue in the premium zone", "zone", "llm"),
    ],
)
def test_an_llm_plan_that_reads_a_two_field_word_as_the_rules_do_is_kept(
    stand_in: tuple[Script, str], question: str, key: str, backend: str
) -> None:
    script, endpoint = stand_in
    script.content = _revenue_in(key)
    result = _parser(endpoint).parse(question, TWO_FIELDS, NOW)
    assert result.backend == backend and result.status == "ok"
    assert result.plan["filters"]["attributes"] == {key: "premium"}


def test_an_llm_plan_that_guesses_a_two_field_word_falls_back_to_the_rules(
    stand_in: tuple[Script, str], caplog: pytest.LogCaptureFixture
) -> None:
    script, endpoint = stand_in
    # purchases carry no zone: "premium" as a zone is a guess the measure's events do not back
    script.content = _revenue_in("zone")
    with caplog.at_level(logging.WARNING, logger="edge.llm"):
        result = _parser(endpoint).parse("revenue from premium last month", TWO_FIELDS, NOW)
    assert result.backend != "llm"
    assert result.status == "ok"
    assert result.plan["filters"]["attributes"] == {"product_category": "premium"}
    assert "'premium'" in caplog.text and "rule parser" in caplog.text


def test_an_llm_plan_on_a_word_nothing_decides_is_refused_by_the_rules(stand_in: tuple[Script, str]) -> None:
    script, endpoint = stand_in
    undecided = dataclasses.replace(TWO_FIELDS, keys_by_type={})  # the memory does not say
    script.content = _revenue_in("product_category")
    result = _parser(endpoint).parse("revenue from premium last month", undecided, NOW)
    assert result.backend != "llm"
    assert result.status == "unsupported"
    assert "premium" in (result.explanation or "")
