"""Writes cases.jsonl: conversations with tools, tool calls and tool results, each with the text
and token ids Hugging Face's apply_chat_template gives for the tiny checkpoint's chat template and
tokenizer (tests/data/tiny-qwen3vl, the template and tokenizer of Qwen3-VL-2B-Instruct).
tests/text/chat_tools_test.cpp renders the same messages and compares both.

    python make_cases.py   # needs transformers; run from anywhere
"""
import json
import os

from transformers import AutoTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, '..', 'tiny-qwen3vl')

WEATHER = {"type": "function", "function": {
    "name": "get_weather",
    "description": "Météo à <Paris> & \"ailleurs\"\n\ttabs\u0001 \u2028 東京 🌦",
    "parameters": {"type": "object",
                   "properties": {"city": {"type": "string", "enum": ["Zürich", "東京"]},
                                  "unit": {"type": "string", "default": "celsius"},
                                  "days": {"type": "integer", "minimum": 1, "maximum": 14}},
                   "required": ["city"], "additionalProperties": False}}}
NUMBERS = {"type": "function", "function": {
    "parameters": {"type": "object", "properties": {"x": {"type": "number", "examples": [
        1e16, 1e15, 0.0001, 1e-05, -0.0, 1.5e300, 123456789.123, 0.1, 100.0, -2.5e-7,
        9007199254740993, -17, 0, True, None, [], {}]}}},
    "name": "numbers",
    "description": ""}}
NO_PARAMS = {"type": "function", "function": {"name": "now"}}
# Integers past int64 (Python keeps every digit; the reader keeps them up to 2^64-1).
BIG = {"type": "function", "function": {"name": "big", "parameters": {
    "type": "object", "properties": {"n": {"type": "integer", "minimum": -9223372036854775808,
                                           "maximum": 18446744073709551615,
                                           "examples": [9223372036854775808, 9223372036854775807]}}}}}
TOOLS = [WEATHER, NUMBERS, NO_PARAMS]

CALLS = [{"id": "call_1", "type": "function",
          "function": {"name": "get_weather", "arguments": "{\"city\": \"Zürich\"}"}},
         {"id": "call_2", "type": "function",
          "function": {"name": "get_weather", "arguments": {"city": "東京", "days": 3}}}]

CASES = [
    ("system_and_tools", TOOLS, True,
     [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather?"}]),
    ("tools_without_system", [WEATHER], True, [{"role": "user", "content": "Weather in Zürich?"}]),
    ("system_parts_and_tools", [NO_PARAMS], True,
     [{"role": "system", "content": [{"type": "text", "text": "A"}, {"type": "text", "text": "B"}]},
      {"role": "user", "content": "time?"}]),
    ("round_trip", TOOLS, True,
     [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": None, "tool_calls": CALLS},
      {"role": "tool", "tool_call_id": "call_1", "content": "12C"},
      {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "20C"}]}]),
    ("content_then_call", [WEATHER], True,
     [{"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": "Let me check.", "tool_calls": CALLS[:1]},
      {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 12}"},
      {"role": "assistant", "content": "It is 12C."},
      {"role": "user", "content": "And tomorrow?"}]),
    ("empty_content_call", [WEATHER], False,
     [{"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": "", "tool_calls": CALLS[1:]}]),
    ("big_integers", [BIG], True, [{"role": "user", "content": "n?"}]),
    # A list is true in the template even when its one text is empty; an empty list is not.
    ("empty_text_part_call", [WEATHER], False,
     [{"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": [{"type": "text", "text": ""}], "tool_calls": CALLS[:1]}]),
    ("empty_list_call", [WEATHER], False,
     [{"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": [], "tool_calls": CALLS[:1]}]),
    ("history_without_tools", None, True,
     [{"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": None, "tool_calls": CALLS},
      {"role": "tool", "tool_call_id": "call_1", "content": "12C"},
      {"role": "user", "content": "thanks"}]),
]


def main():
    tok = AutoTokenizer.from_pretrained(MODEL)
    with open(os.path.join(HERE, 'cases.jsonl'), 'w', encoding='utf-8') as out:
        for name, tools, gen, messages in CASES:
            text = tok.apply_chat_template(messages, tools=tools, add_generation_prompt=gen,
                                           tokenize=False)
            ids = tok.apply_chat_template(messages, tools=tools, add_generation_prompt=gen,
                                          tokenize=True, return_dict=True)['input_ids']
            case = {"name": name, "messages": messages, "add_generation_prompt": gen,
                    "text": text, "ids": ids}
            if tools is not None:
                case["tools"] = tools
            out.write(json.dumps(case, ensure_ascii=False) + '\n')


if __name__ == '__main__':
    main()
