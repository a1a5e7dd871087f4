"""Structured-output cases of serve_api (api_test.py): response_format json_schema and
json_object through the openai client, greedy and sampled, validated with `jsonschema`; the
client's .parse() with a Pydantic model; unsupported schema features are 400s naming them."""
import json

import jsonschema
import pydantic

INVOICE = {
    "type": "object",
    "properties": {
        "vendor": {"type": "string", "maxLength": 10},
        "total": {"type": "number", "minimum": 0, "maximum": 10000},
        "lines": {"type": "array", "maxItems": 2, "items": {
            "type": "object", "properties": {"品名": {"type": "string", "maxLength": 6},
                                             "qty": {"type": "integer", "minimum": 1, "maximum": 9}},
            "required": ["品名", "qty"], "additionalProperties": False}},
        "paid": {"type": "boolean"},
        "currency": {"enum": ["EUR", "USD", "¥"]},
    },
    "required": ["vendor", "total", "lines", "paid", "currency"],
    "additionalProperties": False,
}


class Item(pydantic.BaseModel):
    name: str = pydantic.Field(max_length=8)
    count: int = pydantic.Field(ge=0, le=50)
    note: str | None = pydantic.Field(default=None, max_length=5)


def run(client, check, expect_error):
    msgs = [{"role": "user", "content": "Read the invoice into JSON."}]
    create = client.chat.completions.create
    fmt = {"type": "json_schema", "json_schema": {"name": "invoice", "schema": INVOICE, "strict": True}}
    for kw in ({"temperature": 0}, {"temperature": 1.0, "seed": 11}, {"temperature": 0.8, "top_p": 0.9, "seed": 4}):
        r = create(model="m", messages=msgs, max_tokens=1500, response_format=fmt, **kw)
        c = r.choices[0]
        check(c.finish_reason == "stop", f"json_schema {kw}: finish_reason {c.finish_reason}")
        try:
            jsonschema.validate(json.loads(c.message.content), INVOICE)
        except Exception as e:  # noqa: BLE001 - any failure is the finding
            check(False, f"json_schema {kw}: {c.message.content!r} does not validate: {e}")
    streamed = "".join(ch.choices[0].delta.content or "" for ch in create(
        model="m", messages=msgs, max_tokens=1500, response_format=fmt, temperature=0, stream=True)
        if ch.choices)
    plain = create(model="m", messages=msgs, max_tokens=1500, response_format=fmt, temperature=0)
    check(streamed == plain.choices[0].message.content, "json_schema streamed equals plain")
    obj = create(model="m", messages=msgs, max_tokens=300, temperature=0,
                 response_format={"type": "json_object"})
    if obj.choices[0].finish_reason == "stop":
        check(isinstance(json.loads(obj.choices[0].message.content), dict), "json_object is an object")
    parsed = client.chat.completions.parse(model="m", messages=msgs, max_tokens=1500,
                                           temperature=0, response_format=Item)
    check(isinstance(parsed.choices[0].message.parsed, Item),
          f".parse() with a Pydantic model: {parsed.choices[0].message.content!r}")
    bad = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "number", "multipleOf": 3}}}
    expect_error(400, lambda: create(model="m", messages=msgs, response_format=bad), "multipleOf")
