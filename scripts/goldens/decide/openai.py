"""Golden OpenAI wire mappings for laya serve from upstream Laya's own laya/openai_api.py.

Runs upstream's pure-Python request parsing and response formatting (NandhaKishorM/laya;
it imports only laya.structured and, for the moderation preset, laya.presets) over the
requests below, and writes the questions each plans to (or the rejection and its
status), the message or output item given answers produce, and moderation rows:

    python3 scripts/goldens/decide/openai.py /path/to/laya-checkout > testdata/decide/openai.json

Ids and timestamps are random upstream and are left out.
"""
import importlib
import json
import os
import sys

BOOL = {"type": "boolean"}
TICKET = {"type": "object", "properties": {
    "department": {"type": "string", "enum": ["billing", "support", "sales"], "description": "Which team?"},
    "urgency": {"type": "integer", "minimum": 0, "maximum": 2},
    "needs_human": BOOL,
}}
TICKET_ANSWERS = {
    "department": {"type": "choice", "choice": "support", "confidence": 0.5,
                   "probabilities": {"billing": 0.2, "support": 0.5, "sales": 0.3}},
    "urgency": {"type": "score", "score": 1.4, "confidence": 0.3, "probabilities": {"0": 0.1, "1": 0.4, "2": 0.5}},
    "needs_human": {"type": "noul", "noul": 0.62, "confidence": 0.62},
}
USAGE = {"input_tokens": 42, "output_tokens": 0}
MSG = [{"role": "user", "content": "I was charged twice"}]


def fn(name, params, description=None):
    f = {"name": name, "parameters": params}
    if description is not None:
        f["description"] = description
    return {"type": "function", "function": f}


def flat(name, params, description=None):
    t = {"type": "function", "name": name, "parameters": params}
    if description is not None:
        t["description"] = description
    return t


ROUTE = {"type": "object", "properties": {"team": {"enum": ["billing", "tech"]}, "urgent": BOOL}, "required": ["team"]}
REFUND = {"type": "object", "properties": {"amount": {"type": "integer", "minimum": 1, "maximum": 3}}}
TOOL_ANSWERS = {
    "route__team": {"type": "choice", "choice": "tech", "confidence": 0.7, "probabilities": {"billing": 0.3, "tech": 0.7}},
    "route__urgent": {"type": "noul", "noul": 0.3, "confidence": 0.7},
    "refund__amount": {"type": "score", "score": 0.4, "confidence": 0.4, "probabilities": {"0": 0.7, "1": 0.2, "2": 0.1}},
}

CASES = [
    {"name": "chat-schema", "api": "chat", "body": {"model": "laya", "messages": MSG, "response_format": {
        "type": "json_schema", "json_schema": {"name": "ticket", "schema": TICKET}}}, "answers": TICKET_ANSWERS},
    {"name": "chat-schema-conversation", "api": "chat", "body": {"messages": [
        {"role": "system", "content": "You route tickets."},
        {"role": "user", "content": [{"type": "text", "text": "charged"}, {"type": "image_url", "image_url": {}}, "twice"]},
        {"role": "assistant", "content": None}],
        "response_format": {"type": "json_schema", "json_schema": {"schema": TICKET}}}, "answers": TICKET_ANSWERS},
    {"name": "chat-one-tool", "api": "chat", "body": {"messages": MSG, "tools": [fn("route", ROUTE, "Route a ticket")]},
     "answers": TOOL_ANSWERS},
    {"name": "chat-two-tools", "api": "chat", "body": {"messages": MSG, "tools": [
        fn("route", ROUTE, "Route a ticket"), fn("refund", REFUND)]},
     "answers": dict(TOOL_ANSWERS, tool={"type": "choice", "choice": "refund", "confidence": 0.2,
                                         "probabilities": {"route": 0.4, "refund": 0.6}})},
    {"name": "chat-forced-tool", "api": "chat", "body": {"messages": MSG, "tools": [
        fn("route", ROUTE), fn("refund", REFUND)], "tool_choice": {"type": "function", "function": {"name": "route"}}},
     "answers": TOOL_ANSWERS},
    {"name": "chat-tool-choice-auto", "api": "chat", "body": {"messages": MSG, "stream": False, "n": 1, "tools": [
        fn("route", ROUTE), fn("refund", REFUND)], "tool_choice": "auto"},
     "answers": dict(TOOL_ANSWERS, tool={"type": "choice", "choice": "route", "confidence": 0.2,
                                         "probabilities": {"route": 0.6, "refund": 0.4}})},
    {"name": "responses-schema", "api": "responses", "body": {"input": "I was charged twice", "text": {"format": {
        "type": "json_schema", "name": "ticket", "schema": TICKET}}}, "answers": TICKET_ANSWERS},
    {"name": "responses-input-items", "api": "responses", "body": {"input": [
        "first", {"role": "user", "content": [{"type": "input_text", "text": "second"}]}, {"content": "third"}],
        "text": {"format": {"type": "json_schema", "schema": TICKET}}}, "answers": TICKET_ANSWERS},
    {"name": "responses-flat-tools", "api": "responses", "body": {"input": "refund me", "tools": [
        flat("route", ROUTE, "Route a ticket"), flat("refund", REFUND, "Give money back")]},
     "answers": dict(TOOL_ANSWERS, tool={"type": "choice", "choice": "route", "confidence": 0.2,
                                         "probabilities": {"route": 0.6, "refund": 0.4}})},
    {"name": "responses-forced-flat", "api": "responses", "body": {"input": "refund me", "tools": [
        flat("route", ROUTE), flat("refund", REFUND)], "tool_choice": {"type": "function", "name": "refund"}},
     "answers": TOOL_ANSWERS},
    # rejections
    {"name": "no-format", "api": "chat", "body": {"messages": MSG}},
    {"name": "json-object", "api": "chat", "body": {"messages": MSG, "response_format": {"type": "json_object"}}},
    {"name": "text-format-type", "api": "chat", "body": {"messages": MSG, "response_format": {"type": "text"}}},
    {"name": "no-schema", "api": "chat", "body": {"messages": MSG, "response_format": {"type": "json_schema", "json_schema": {"name": "x"}}}},
    {"name": "both", "api": "chat", "body": {"messages": MSG, "tools": [fn("route", ROUTE)], "response_format": {"type": "json_object"}}},
    {"name": "nine-tools", "api": "chat", "body": {"messages": MSG, "tools": [fn("t%d" % i, ROUTE) for i in range(9)]}},
    {"name": "duplicate-tool", "api": "chat", "body": {"messages": MSG, "tools": [fn("a", ROUTE), fn("a", REFUND)]}},
    {"name": "retrieval-tool", "api": "chat", "body": {"messages": MSG, "tools": [{"type": "retrieval"}]}},
    {"name": "nameless-tool", "api": "chat", "body": {"messages": MSG, "tools": [{"type": "function", "function": {"parameters": ROUTE}}]}},
    {"name": "tool-without-properties", "api": "chat", "body": {"messages": MSG, "tools": [{"type": "function", "function": {"name": "a"}}]}},
    {"name": "unknown-tool-choice", "api": "chat", "body": {"messages": MSG, "tools": [fn("route", ROUTE)], "tool_choice": {"type": "function", "function": {"name": "nope"}}}},
    {"name": "stream", "api": "chat", "body": {"messages": MSG, "stream": True, "tools": [fn("route", ROUTE)]}},
    {"name": "n", "api": "chat", "body": {"messages": MSG, "n": 3, "tools": [fn("route", ROUTE)]}},
    {"name": "no-messages", "api": "chat", "body": {"tools": [fn("route", ROUTE)]}},
    {"name": "message-without-role", "api": "chat", "body": {"messages": [{"content": "x"}], "tools": [fn("route", ROUTE)]}},
    {"name": "tool-free-string", "api": "chat", "body": {"messages": MSG, "tools": [fn("a", {"properties": {"name": {"type": "string"}}})]}},
    {"name": "schema-array", "api": "chat", "body": {"messages": MSG, "response_format": {"type": "json_schema", "json_schema": {"schema": {"properties": {"tags": {"type": "array"}}}}}}},
    {"name": "responses-no-format", "api": "responses", "body": {"input": "x"}},
    {"name": "responses-json-object", "api": "responses", "body": {"input": "x", "text": {"format": {"type": "json_object"}}}},
    {"name": "responses-both", "api": "responses", "body": {"input": "x", "tools": [flat("a", ROUTE)], "text": {"format": {"type": "json_schema", "schema": TICKET}}}},
    {"name": "responses-bad-input", "api": "responses", "body": {"input": [], "tools": [flat("a", ROUTE)]}},
    {"name": "responses-bad-item", "api": "responses", "body": {"input": [3], "tools": [flat("a", ROUTE)]}},
    {"name": "responses-format-not-object", "api": "responses", "body": {"input": "x", "text": {"format": "json_schema"}}},
    {"name": "responses-no-schema", "api": "responses", "body": {"input": "x", "text": {"format": {"type": "json_schema"}}}},
]

MODERATION = [
    {"toxic": {"type": "noul", "noul": 0.81, "confidence": 0.81},
     "harassment": {"type": "noul", "noul": 0.12, "confidence": 0.88},
     "severity": {"type": "score", "score": 1.7, "confidence": 0.3,
                  "probabilities": {"0": 0.1, "1": 0.3, "2": 0.4, "3": 0.2}}},
    {"toxic": {"type": "noul", "noul": 0.5, "confidence": 0.5},
     "severity": {"type": "score", "score": 0.9, "confidence": 0.3,
                  "probabilities": {"0": 0.4, "1": 0.4, "2": 0.1, "3": 0.1}}},
]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: openai.py /path/to/upstream-laya-checkout")
    sys.path.insert(0, os.path.abspath(sys.argv[1]))
    api = importlib.import_module("laya.openai_api")
    structured = importlib.import_module("laya.structured")
    out = []
    for case in CASES:
        row = {"name": case["name"], "api": case["api"], "body": case["body"]}
        parse = api.parse_chat_request if case["api"] == "chat" else api.parse_responses_request
        try:
            plan = parse(case["body"])
        except api.UnsupportedRequest as exc:
            row["status"], row["error"] = 400, str(exc)
            out.append(row)
            continue
        except structured.SchemaError as exc:
            row["status"], row["error"] = 422, str(exc)
            out.append(row)
            continue
        row["state"] = plan.state
        row["questions"] = plan.questions
        row["forced_tool"] = plan.forced_tool
        if "answers" in case:
            result = {"answers": case["answers"], "usage": USAGE}
            row["answers"] = case["answers"]
            if case["api"] == "chat":
                resp = api.format_chat_response(plan, result)
                message = resp["choices"][0]["message"]
                for call in message.get("tool_calls") or []:
                    call.pop("id")
                row["message"] = message
                row["finish_reason"] = resp["choices"][0]["finish_reason"]
            else:
                resp = api.format_responses_response(plan, result)
                for item in resp["output"]:
                    item.pop("call_id", None)
                row["output"] = resp["output"]
            row["usage"] = resp["usage"]
            row["model"] = resp["model"]
        out.append(row)
    moderation = api.moderation_payload([{"answers": a} for a in MODERATION], threshold=0.5)
    json.dump({"source": "NandhaKishorM/laya laya/openai_api.py", "cases": out,
               "moderation": {"answers": MODERATION, "threshold": 0.5, "results": moderation["results"]}},
              sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
