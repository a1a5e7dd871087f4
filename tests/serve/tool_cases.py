"""Tool-calling cases of serve_api (api_test.py), through the openai client on the tiny
checkpoint (random weights: the grammar is what makes its calls valid): tool_choice "required"
and a named function give calls whose arguments validate against the function's parameters,
streamed equal to plain; a round trip (call, result, next turn) is accepted; "none" and "auto"
answer; /tokenize with tools gives Hugging Face's apply_chat_template ids
(tests/data/chat_tools/cases.jsonl) and /detokenize gives the text back."""
import json
import os

import jsonschema

WEATHER = {"type": "object",
           "properties": {"city": {"type": "string", "enum": ["Zürich", "東京", "Paris"]},
                          "days": {"type": "integer", "minimum": 1, "maximum": 14},
                          "note": {"type": "string", "maxLength": 8}},
           "required": ["city"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather",
                                           "parameters": WEATHER}},
         {"type": "function", "function": {"name": "now", "description": "The time"}}]
SCHEMAS = {"get_weather": WEATHER,
           "now": {"type": "object", "properties": {}, "additionalProperties": False}}


def valid_calls(check, what, choice, names):
    calls = choice.message.tool_calls or []
    check(choice.finish_reason == "tool_calls", f"{what}: finish_reason {choice.finish_reason}")
    check(len(calls) >= 1, f"{what}: no tool calls ({choice.message.content!r})")
    for c in calls:
        check(c.type == "function" and c.id.startswith("call_"), f"{what}: call {c}")
        check(c.function.name in names, f"{what}: name {c.function.name}")
        try:
            jsonschema.validate(json.loads(c.function.arguments), SCHEMAS[c.function.name])
        except Exception as e:  # noqa: BLE001 - any failure is the finding
            check(False, f"{what}: arguments {c.function.arguments!r}: {e}")
    return calls


def streamed_calls(create, **kw):
    """The calls and content of a streamed answer, accumulated as clients do."""
    calls, content, finish = {}, "", None
    for ch in create(stream=True, **kw):
        if not ch.choices:
            continue
        d = ch.choices[0].delta
        content += d.content or ""
        for t in d.tool_calls or []:
            c = calls.setdefault(t.index, {"id": None, "name": "", "arguments": ""})
            c["id"] = t.id or c["id"]
            if t.function:
                c["name"] += t.function.name or ""
                c["arguments"] += t.function.arguments or ""
        finish = ch.choices[0].finish_reason or finish
    return [calls[i] for i in sorted(calls)], content, finish


def run(client, check, expect_error, server_url, http, model_dir):
    create = client.chat.completions.create
    msgs = [{"role": "user", "content": "What is the weather in Zürich?"}]
    named = {"type": "function", "function": {"name": "get_weather"}}
    for kw in ({"temperature": 0}, {"temperature": 1.0, "seed": 5}):
        r = create(model="m", messages=msgs, tools=TOOLS, tool_choice=named, max_tokens=200, **kw)
        calls = valid_calls(check, f"named {kw}", r.choices[0], {"get_weather"})
        check(len(calls) == 1, f"named {kw}: {len(calls)} calls")
        r = create(model="m", messages=msgs, tools=TOOLS, tool_choice="required",
                   parallel_tool_calls=False, max_tokens=200, **kw)
        check(len(valid_calls(check, f"required {kw}", r.choices[0], set(SCHEMAS))) == 1,
              f"required, parallel_tool_calls false {kw}: one call")
    r = create(model="m", messages=msgs, tools=TOOLS, tool_choice="required", max_tokens=400,
               temperature=0.7, seed=3)
    if r.choices[0].finish_reason != "length":
        valid_calls(check, "required", r.choices[0], set(SCHEMAS))

    # Streamed equals plain: the same calls (names, arguments) and the same finish.
    plain = create(model="m", messages=msgs, tools=TOOLS, tool_choice=named, max_tokens=200,
                   temperature=0).choices[0]
    calls, content, finish = streamed_calls(create, model="m", messages=msgs, tools=TOOLS,
                                            tool_choice=named, max_tokens=200, temperature=0)
    check([(c["name"], c["arguments"]) for c in calls]
          == [(c.function.name, c.function.arguments) for c in plain.message.tool_calls or []],
          f"streamed calls {calls} equal plain {plain.message.tool_calls}")
    check(finish == plain.finish_reason and content == (plain.message.content or ""),
          f"streamed finish/content {finish!r} {content!r}")
    check(all(c["id"] and c["id"].startswith("call_") for c in calls), "streamed call ids")

    # A round trip: the call goes back into the history with its result; the next turn answers.
    call = plain.message.tool_calls[0]
    history = msgs + [plain.message.model_dump(exclude_none=True),
                      {"role": "tool", "tool_call_id": call.id, "content": "12°C, sunny"}]
    again = create(model="m", messages=history, tools=TOOLS, max_tokens=8, temperature=0)
    check(again.choices[0].finish_reason in ("stop", "length", "tool_calls"),
          f"round trip: {again.choices[0].finish_reason}")
    none = create(model="m", messages=history, tools=TOOLS, tool_choice="none", max_tokens=8,
                  temperature=0)
    check(none.choices[0].message.tool_calls is None and none.choices[0].finish_reason != "tool_calls",
          "tool_choice none: no calls")
    # Pushed hard toward <tool_call> (151657), "none" still never writes one; "auto" does.
    pushed = {"151657": 100}
    none = create(model="m", messages=history, tools=TOOLS, tool_choice="none", max_tokens=8,
                  temperature=0, logit_bias=pushed)
    check(none.choices[0].message.tool_calls is None
          and "<tool_call>" not in (none.choices[0].message.content or ""),
          f"tool_choice none with a bias toward <tool_call>: {none.choices[0].message}")
    auto = create(model="m", messages=history, tools=TOOLS, max_tokens=60, temperature=0,
                  logit_bias=pushed)
    check(auto.choices[0].message.tool_calls is not None
          or "<tool_call>" in (auto.choices[0].message.content or ""),
          f"tool_choice auto with a bias toward <tool_call> opens one: {auto.choices[0].message}")

    expect_error(400, lambda: create(model="m", messages=msgs, tools=TOOLS,
                                     tool_choice={"type": "function", "function": {"name": "x"}}),
                 "'x' is not among the tools")
    expect_error(400, lambda: create(model="m", messages=msgs, tool_choice="required"),
                 "no tools")
    expect_error(400, lambda: create(model="m", messages=msgs, tools=[{"type": "function",
                 "function": {"name": "f", "parameters": {"type": "number", "multipleOf": 2}}}],
                 tool_choice="required"), "multipleOf")
    expect_error(400, lambda: create(model="m", messages=msgs, tools=TOOLS, tool_choice="required",
                                     response_format={"type": "json_object"}), "response_format")

    # /tokenize with tools gives Hugging Face's ids; /detokenize gives the text back.
    golden = os.path.join(model_dir, "..", "chat_tools", "cases.jsonl")
    compared = 0
    for line in open(golden, encoding="utf-8"):
        c = json.loads(line)
        calls_of = [t for m in c["messages"] for t in m.get("tool_calls") or []]
        if any(not isinstance(t["function"]["arguments"], str) for t in calls_of):
            continue  # OpenAI sends arguments as JSON strings; the server takes only those
        body = {"messages": c["messages"], "add_generation_prompt": c["add_generation_prompt"]}
        if "tools" in c:
            body["tools"] = c["tools"]
        status, _, out = http("POST", server_url + "/tokenize", body)
        got = json.loads(out)
        check(status == 200 and got.get("tokens") == c["ids"],
              f"/tokenize {c['name']}: {status} {str(got)[:200]}")
        check(got.get("count") == len(c["ids"]) and got.get("max_model_len", 0) > 0,
              f"/tokenize {c['name']}: count and max_model_len")
        status, _, out = http("POST", server_url + "/detokenize", {"tokens": c["ids"]})
        check(status == 200 and json.loads(out).get("prompt") == c["text"],
              f"/detokenize {c['name']}: {status} {out[:200]!r}")
        compared += 1
    check(compared >= 7, f"/tokenize compared {compared} golden conversations")
    status, _, out = http("POST", server_url + "/tokenize", {"prompt": "<|im_start|>hi"})
    check(status == 200 and json.loads(out)["tokens"][0] == 151644, f"/tokenize prompt: {out!r}")
    status, _, out = http("POST", server_url + "/detokenize", {"tokens": [10**9]})
    check(status == 400 and b"outside the vocabulary" in out, f"/detokenize bad id: {out!r}")
    status, _, out = http("POST", server_url + "/tokenize", {"prompt": "x", "messages": []})
    check(status == 400, f"/tokenize both prompt and messages: {status}")
