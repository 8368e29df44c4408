"""A deterministic stand-in for a memory model: answers remem's prompts by rule.

`memory_model` reads a chat-completion request made by remem's LLM strategies
(or its consolidation), recognises the prompt, and answers the JSON the
prompt asks for from the numbered events in the request, so tests and
`remem bench --llm-fake` exercise the whole pipeline over HTTP without a real
model. The rules are deliberately simple:

- semantic: one fact per user turn; "I live in X" / "I moved to X" give the
  attribute "home city" with value X;
- preference: a preference per user turn that says "prefer", "love" or "like";
- summary: one topic, "conversation", whose summary joins the new turns;
  questions are unresolved, tool turns are key events;
- episodic: one episode per tool turn, verified when it says "confirmed";
- consolidation: UPDATE the first neighbour when the candidate says "moved",
  NOOP when a neighbour says exactly the same, ADD otherwise.
"""

from __future__ import annotations

import json
import re
from typing import Any

from remem.testing.llm_server import Reply

_EVENT = re.compile(r"^\[(\d+)\] \S+ (.+?) \((user|assistant|tool|system)\): (.*)$")
_CANDIDATE = re.compile(r'^Candidate (\d+) \([^)]*\): (".*")$')
_NEIGHBOUR = re.compile(r'^  - id (\S+) \([^)]*\): (".*")$')
_HOME = re.compile(r"\bI (?:live|moved) (?:in|to) ([A-Z][\w ]+?)(?:[.!,]|$)")


def memory_model(request: dict[str, Any]) -> Reply:
    """Answer one remem prompt; see the module docstring."""
    messages = request.get("messages", [])
    system = str(messages[0].get("content", "")) if messages else ""
    user = str(messages[-1].get("content", "")) if messages else ""
    if "long-term memory consistent" in system:
        return Reply.json(_consolidate(user))
    events = _events(user)
    if "durable facts" in system:
        facts = []
        for n, _who, role, text in events:
            if role != "user":
                continue
            home = _HOME.search(text)
            facts.append(
                {
                    "text": f"The user said: {text}",
                    "attribute": "home city" if home else None,
                    "value": home.group(1).strip() if home else None,
                    "event": n,
                }
            )
        return Reply.json({"facts": facts})
    if "preferences" in system:
        prefs = [
            {"text": f"The user likes this: {text}", "category": "general", "event": n}
            for n, _who, role, text in events
            if role == "user" and re.search(r"\b(prefer|love|like)s?\b", text, re.I)
        ]
        return Reply.json({"preferences": prefs})
    if "running summary" in system:
        if not events:
            return Reply.json({"topics": []})
        topic = {
            "topic": "conversation",
            "summary": " ".join(text for _, _, _, text in events)[:1500],
            "unresolved": [text for _, _, _, text in events if text.rstrip().endswith("?")][:5],
            "key_events": [n for n, _, role, _ in events if role == "tool"],
        }
        return Reply.json({"topics": [topic]})
    if "attempted" in system:
        episodes = [
            {
                "attempt": f"tool call {n}",
                "actions": [text[:200]],
                "outcome": text[:200],
                "verified": "confirmed" in text.lower(),
                "events": [n],
            }
            for n, _, role, text in events
            if role == "tool"
        ]
        return Reply.json({"episodes": episodes})
    return Reply.error(400, "memory_model: unknown prompt")


def _events(user: str) -> list[tuple[int, str, str, str]]:
    out = []
    for line in user.splitlines():
        m = _EVENT.match(line)
        if m:
            out.append((int(m.group(1)), m.group(2), m.group(3), m.group(4)))
    return out


def _consolidate(user: str) -> dict[str, Any]:
    decisions: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for line in user.splitlines():
        c = _CANDIDATE.match(line)
        if c:
            current = {"n": int(c.group(1)), "text": json.loads(c.group(2)), "near": []}
            decisions.append(current)
            continue
        nb = _NEIGHBOUR.match(line)
        if nb and current is not None:
            current["near"].append((nb.group(1), json.loads(nb.group(2))))
    out = []
    for d in decisions:
        action, target = "ADD", None
        same = [rid for rid, text in d["near"] if text == d["text"]]
        if same:
            action, target = "NOOP", same[0]
        elif "moved" in d["text"].lower() and d["near"]:
            action, target = "UPDATE", d["near"][0][0]
        out.append({"candidate": d["n"], "action": action, "target": target, "reason": "rule"})
    return {"decisions": out}
