"""ScriptedLLM: the loopback OpenAI-compatible server that tests script, driven by the
real `openai` client."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from remem.testing.llm_server import NO_REPLY, Reply, ScriptedLLM

MESSAGES: Any = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "hello there world"},
]


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


def _client(llm: ScriptedLLM, timeout: float = 5.0) -> openai.OpenAI:
    return openai.OpenAI(base_url=llm.base_url, api_key="test", max_retries=0, timeout=timeout)


def _ask(client: openai.OpenAI, model: str = "fake-model") -> Any:
    return client.chat.completions.create(model=model, messages=MESSAGES)


def test_a_scripted_json_reply_round_trips_with_usage(llm: ScriptedLLM) -> None:
    assert llm.base_url.startswith("http://127.0.0.1:") and llm.base_url.endswith("/v1")
    llm.script(
        Reply.json({"facts": []}), Reply.json({"a": 1}, prompt_tokens=7, completion_tokens=3)
    )
    with _client(llm) as client:
        first = _ask(client, model="my-model")
        second = _ask(client)
    assert json.loads(first.choices[0].message.content or "") == {"facts": []}
    assert first.model == "my-model" and first.choices[0].finish_reason == "stop"
    assert first.id == "chatcmpl-1" and second.id == "chatcmpl-2"
    # estimated: 2 + 3 words in the prompt; '{"facts": []}' is 2 words
    assert first.usage is not None and second.usage is not None
    assert (first.usage.prompt_tokens, first.usage.completion_tokens) == (5, 2)
    assert first.usage.total_tokens == 7
    assert (second.usage.prompt_tokens, second.usage.completion_tokens) == (7, 3)
    assert json.loads(second.choices[0].message.content or "") == {"a": 1}


def test_requests_are_recorded_in_order(llm: ScriptedLLM) -> None:
    llm.script(Reply.json({}), Reply.json({}))
    with _client(llm) as client:
        _ask(client, model="m1")
        _ask(client, model="m2")
    assert llm.calls == 2
    assert [r["model"] for r in llm.requests] == ["m1", "m2"]
    assert llm.requests[0]["messages"] == MESSAGES
    llm.requests.clear()  # a copy: the record is untouched
    assert len(llm.requests) == 2


def test_the_queue_is_fifo_then_the_responder_answers(llm: ScriptedLLM) -> None:
    seen: list[dict[str, Any]] = []

    def responder(request: dict[str, Any]) -> Reply:
        seen.append(request)
        return Reply.json({"from": "responder", "n": len(seen)})

    llm.script(Reply.json({"from": "script", "n": 1}), Reply.json({"from": "script", "n": 2}))
    llm.responder = responder
    assert llm.pending == 2
    with _client(llm) as client:
        answers = [json.loads(_ask(client).choices[0].message.content or "") for _ in range(4)]
    assert answers == [
        {"from": "script", "n": 1},
        {"from": "script", "n": 2},
        {"from": "responder", "n": 1},
        {"from": "responder", "n": 2},
    ]
    assert llm.pending == 0 and seen[0]["messages"] == MESSAGES


def test_constructor_responder_and_model() -> None:
    with ScriptedLLM(responder=lambda _r: Reply.text("hi"), model="other") as llm:
        with _client(llm) as client:
            assert _ask(client).choices[0].message.content == "hi"
            assert [m.id for m in client.models.list()] == ["other"]
        # a request without a model gets the server's default model
        body = httpx.post(f"{llm.base_url}/chat/completions", json={"messages": []}).json()
        assert body["model"] == "other" and body["object"] == "chat.completion"


def test_error_500_raises_internal_server_error(llm: ScriptedLLM) -> None:
    llm.script(Reply.error(500, "boom"), Reply.error(503, "busy", headers={"X-Why": "tests"}))
    with _client(llm) as client:
        with pytest.raises(openai.InternalServerError) as err:
            _ask(client)
        assert err.value.status_code == 500
        assert err.value.body == {"message": "boom", "type": "server_error", "code": "500"}
        with pytest.raises(openai.InternalServerError) as err:
            _ask(client)
        assert err.value.status_code == 503 and err.value.response.headers["x-why"] == "tests"


def test_rate_limited_carries_retry_after(llm: ScriptedLLM) -> None:
    llm.script(Reply.rate_limited(retry_after=0.04), Reply.rate_limited())
    with _client(llm) as client:
        with pytest.raises(openai.RateLimitError) as err:
            _ask(client)
        assert float(err.value.response.headers["retry-after"]) == 0.04
        with pytest.raises(openai.RateLimitError) as err:
            _ask(client)
        assert err.value.response.headers["Retry-After"] == "1"


def test_slow_past_the_timeout_times_out_and_the_server_survives(
    llm: ScriptedLLM, capfd: pytest.CaptureFixture[str]
) -> None:
    llm.script(Reply.slow(0.4, Reply.json({"late": True})), Reply.json({"next": True}))
    with _client(llm, timeout=0.1) as client:
        t0 = time.perf_counter()
        with pytest.raises(openai.APITimeoutError):
            _ask(client)
        assert time.perf_counter() - t0 < 0.35
    time.sleep(0.5)  # the slow handler has now written to a connection nobody reads
    with _client(llm) as client:
        assert json.loads(_ask(client).choices[0].message.content or "") == {"next": True}
    assert llm.calls == 2
    assert "Traceback" not in capfd.readouterr().err


def test_a_cut_connection_raises_and_the_server_serves_on(llm: ScriptedLLM) -> None:
    llm.script(Reply.cut(), Reply.json({"after": "cut"}))
    with _client(llm) as client:
        with pytest.raises(openai.APIConnectionError) as err:
            _ask(client)
        assert not isinstance(err.value, openai.APITimeoutError)
        assert json.loads(_ask(client).choices[0].message.content or "") == {"after": "cut"}
    assert llm.calls == 2


def test_cut_sends_a_200_then_stops_short(llm: ScriptedLLM) -> None:
    llm.script(Reply.cut())
    with httpx.Client() as http:
        with http.stream("POST", f"{llm.base_url}/chat/completions", json={}) as response:
            assert response.status_code == 200
            promised = int(response.headers["content-length"])
            received = b""
            with pytest.raises(httpx.RemoteProtocolError):
                for chunk in response.iter_raw():
                    received += chunk
    assert 0 < len(received) < promised


def test_text_returns_arbitrary_content(llm: ScriptedLLM) -> None:
    llm.script(Reply.text("not json"))
    with _client(llm) as client:
        assert _ask(client).choices[0].message.content == "not json"


def test_no_script_and_no_responder_fails_clearly(llm: ScriptedLLM) -> None:
    with _client(llm) as client:
        with pytest.raises(openai.InternalServerError) as err:
            _ask(client)
    assert NO_REPLY == "ScriptedLLM: no scripted reply left"
    assert err.value.status_code == 500 and NO_REPLY in str(err.value)
    assert llm.calls == 1


def test_a_raising_responder_gives_500_with_the_exception_text(llm: ScriptedLLM) -> None:
    def broken(_request: dict[str, Any]) -> Reply:
        raise KeyError("no such prompt")

    llm.responder = broken
    with _client(llm) as client:
        with pytest.raises(openai.InternalServerError) as err:
            _ask(client)
    assert "no such prompt" in str(err.value) and "KeyError" in str(err.value)


def test_a_body_that_is_not_json_gets_400(llm: ScriptedLLM) -> None:
    llm.script(Reply.json({}))
    with httpx.Client() as http:
        for body in (b"{not json", b"[1, 2]"):
            response = http.post(
                f"{llm.base_url}/chat/completions",
                content=body,
                headers={"Content-Type": "application/json"},
            )
            assert response.status_code == 400
            assert response.json()["error"]["type"] == "invalid_request_error"
    assert llm.calls == 0 and llm.pending == 1


def test_unknown_paths_get_404_and_models_lists_the_model(llm: ScriptedLLM) -> None:
    with httpx.Client() as http:
        for method, path in (("GET", "/v1/nope"), ("POST", "/v1/audio/speech")):
            response = http.request(method, f"{llm.base_url.removesuffix('/v1')}{path}", json={})
            assert response.status_code == 404
            assert "no route" in response.json()["error"]["message"]
        models = http.get(f"{llm.base_url}/models").json()
    assert models["object"] == "list" and models["data"][0]["id"] == "fake-model"
    assert llm.calls == 0


def test_saw_auth_records_only_that_a_bearer_token_came(llm: ScriptedLLM) -> None:
    secret = "sk-test-never-kept-123"
    llm.responder = lambda _r: Reply.json({})
    httpx.post(f"{llm.base_url}/chat/completions", json={"messages": []})
    assert not llm.saw_auth
    with openai.OpenAI(base_url=llm.base_url, api_key=secret, max_retries=0) as client:
        _ask(client)
    assert llm.saw_auth
    assert secret not in repr(vars(llm)) and secret not in json.dumps(llm.requests)


def test_server_seconds_exclude_deliberate_delays(llm: ScriptedLLM) -> None:
    llm.script(Reply.slow(0.5, Reply.json({})))
    with _client(llm) as client:
        t0 = time.perf_counter()
        _ask(client)
        assert time.perf_counter() - t0 >= 0.5
    assert 0 < llm.server_seconds < 0.2


def test_concurrent_requests_are_all_recorded(llm: ScriptedLLM) -> None:
    llm.responder = lambda request: Reply.json({"model": request["model"]})
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            with _client(llm) as client:
                for j in range(5):
                    reply = _ask(client, model=f"m{i}-{j}")
                    assert json.loads(reply.choices[0].message.content or "") == {
                        "model": f"m{i}-{j}"
                    }
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not errors and llm.calls == 20
    assert sorted(r["model"] for r in llm.requests) == sorted(
        f"m{i}-{j}" for i in range(4) for j in range(5)
    )


def test_start_stop_and_stop_wakes_a_slow_reply() -> None:
    llm = ScriptedLLM()
    with pytest.raises(RuntimeError):
        _ = llm.base_url
    llm.start()
    url = llm.base_url
    llm.script(Reply.slow(30, Reply.json({})))
    with _client(llm, timeout=0.1) as client, pytest.raises(openai.APITimeoutError):
        _ask(client)
    assert llm.server_seconds == 0  # the handler is still asleep
    t0 = time.perf_counter()
    llm.stop()
    llm.stop()  # idempotent
    assert time.perf_counter() - t0 < 2
    while llm.server_seconds == 0 and time.perf_counter() - t0 < 2:
        time.sleep(0.01)
    assert llm.server_seconds > 0  # stop() woke the sleeper, which finished its request
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{url}/models")


def test_the_cli_echoes_the_last_user_message() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "remem.testing.llm_server", "--port", "0", "--echo"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # a background parent (a CI script started with `&`) leaves SIGINT ignored
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        with openai.OpenAI(base_url=url, api_key="test", max_retries=0, timeout=5) as client:
            reply = _ask(client)
        assert json.loads(reply.choices[0].message.content or "") == {"echo": "hello there world"}
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=30)  # generous: CI machines are busy
        assert proc.returncode == 0, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
