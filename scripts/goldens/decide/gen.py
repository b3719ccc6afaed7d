"""Golden plans and projections for laya.Decide from upstream Laya's own planner.

Runs upstream's pure-Python laya/structured.py (NandhaKishorM/laya; no torch, no
pydantic needed) over the schemas below and writes what it plans, rejects and
projects to testdata/decide/goldens.json.

    python3 scripts/goldens/decide/gen.py /path/to/laya-checkout > testdata/decide/goldens.json

The path is a checkout of upstream (the directory holding laya/structured.py).
Upstream rejects every "$ref"; the cases marked "inline_defs" have their local
"$defs"/"definitions" references inlined by this script first (the definition,
with the keys written beside the reference winning), which is what the Go planner
is meant to do, and upstream's planner then plans the inlined schema.
"""
import copy
import importlib.util
import json
import os
import sys


def load_structured(root):
    path = os.path.join(root, "laya", "structured.py")
    spec = importlib.util.spec_from_file_location("upstream_structured", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while decorating
    spec.loader.exec_module(mod)
    return mod


def inline_defs(schema):
    tables = {"#/$defs/": schema.get("$defs", {}), "#/definitions/": schema.get("definitions", {})}

    def resolve(node):
        if not isinstance(node, dict) or "$ref" not in node:
            return node
        for prefix, table in tables.items():
            if node["$ref"].startswith(prefix):
                target = dict(table[node["$ref"][len(prefix):]])
                target.update({k: v for k, v in node.items() if k != "$ref"})
                return target
        return node

    out = copy.deepcopy(schema)
    for name, prop in out["properties"].items():
        prop = resolve(prop)
        for key in ("anyOf", "oneOf"):
            if isinstance(prop.get(key), list):
                prop[key] = [resolve(b) for b in prop[key]]
        out["properties"][name] = prop
    return out


def obj(**props):
    return {"type": "object", "properties": props}


TICKET = obj(
    department={"type": "string", "enum": ["billing", "support", "sales"],
                "description": "Which team should handle this?"},
    urgency={"type": "integer", "minimum": 0, "maximum": 2},
    needs_human={"type": "boolean"},
    priority={"enum": [1, 2, 3]},
)
TICKET_ANSWERS = {
    "department": {"type": "choice", "choice": "billing", "confidence": 0.9,
                   "probabilities": {"billing": 0.9, "support": 0.1, "sales": 0.0}},
    "urgency": {"type": "score", "score": 1.2, "confidence": 0.5,
                "probabilities": {"0": 0.1, "1": 0.2, "2": 0.7}},
    "needs_human": {"type": "noul", "noul": 0.8, "confidence": 0.8},
    "priority": {"type": "choice", "choice": "2", "confidence": 0.7,
                 "probabilities": {"1": 0.2, "2": 0.7, "3": 0.1}},
}

CASES = [
    {"name": "ticket", "schema": TICKET, "answers": TICKET_ANSWERS},
    {"name": "ticket-other-answers", "schema": TICKET, "answers": {
        "department": {"type": "choice", "choice": "sales", "confidence": 0.4,
                       "probabilities": {"billing": 0.3, "support": 0.3, "sales": 0.4}},
        "urgency": {"type": "score", "score": 0.9, "confidence": 0.1,
                    "probabilities": {"0": 0.4, "1": 0.2, "2": 0.4}},
        "needs_human": {"type": "noul", "noul": 0.5, "confidence": 0.5},
        "priority": {"type": "choice", "choice": "3", "confidence": 0.7,
                     "probabilities": {"1": 0.1, "2": 0.1, "3": 0.8}}}},
    {"name": "no-type-at-top", "schema": {"properties": {"ok": {"type": "boolean", "description": "Is it fine?"}}},
     "answers": {"ok": {"type": "noul", "noul": 0.49, "confidence": 0.51}}},
    {"name": "const", "schema": obj(kind={"const": "refund"}),
     "answers": {"kind": {"type": "choice", "choice": "refund", "confidence": 1.0, "probabilities": {"refund": 1.0}}}},
    {"name": "mixed-enum", "schema": obj(v={"enum": [1, "1", None, True, 2.5, "x"]}),
     "answers": {"v": {"type": "choice", "choice": "1", "confidence": 0.3,
                       "probabilities": {"1": 0.5, "null": 0.1, "True": 0.1, "2.5": 0.2, "x": 0.1}}}},
    {"name": "mixed-enum-null", "schema": obj(v={"enum": [1, None, 2.5, True]}),
     "answers": {"v": {"type": "choice", "choice": "null", "confidence": 0.3,
                       "probabilities": {"1": 0.1, "null": 0.6, "2.5": 0.2, "True": 0.1}}}},
    {"name": "mixed-enum-float", "schema": obj(v={"enum": [1, None, 2.5, True]}),
     "answers": {"v": {"type": "choice", "choice": "2.5", "confidence": 0.3,
                       "probabilities": {"1": 0.1, "null": 0.1, "2.5": 0.7, "True": 0.1}}}},
    {"name": "bool-enum-is-noul", "schema": obj(flag={"enum": [True, False], "description": "Flag it?"}),
     "answers": {"flag": {"type": "noul", "noul": 0.7, "confidence": 0.7}}},
    {"name": "type-list-nullable", "schema": obj(
        urgent={"type": ["boolean", "null"]},
        level={"type": ["null", "integer"], "minimum": 1, "maximum": 3, "description": "How bad?"},
        color={"type": ["string", "null"], "enum": ["red", "blue", None]}),
     "answers": {"urgent": {"type": "noul", "noul": 0.2, "confidence": 0.8},
                 "level": {"type": "score", "score": 1.0, "confidence": 0.3,
                           "probabilities": {"0": 0.2, "1": 0.6, "2": 0.2}},
                 "color": {"type": "choice", "choice": "blue", "confidence": 0.6,
                           "probabilities": {"red": 0.2, "blue": 0.7, "null": 0.1}}}},
    {"name": "pydantic-optional", "schema": obj(
        urgent={"anyOf": [{"type": "boolean"}, {"type": "null"}], "default": None, "title": "Urgent"},
        priority={"anyOf": [{"maximum": 2, "minimum": 0, "type": "integer"}, {"type": "null"}],
                  "default": None, "title": "Priority"},
        channel={"anyOf": [{"enum": ["email", "chat"], "type": "string"}, {"type": "null"}],
                 "default": None, "description": "what the caller sees", "title": "Channel"}),
     "answers": {"urgent": {"type": "noul", "noul": 0.9, "confidence": 0.9},
                 "priority": {"type": "score", "score": 2.0, "confidence": 0.4,
                              "probabilities": {"0": 0.1, "1": 0.3, "2": 0.6}},
                 "channel": {"type": "choice", "choice": "chat", "confidence": 0.2,
                             "probabilities": {"email": 0.45, "chat": 0.55}}}},
    {"name": "oneof-nullable", "schema": obj(
        mood={"oneOf": [{"type": "null"}, {"enum": ["happy", "sad"], "description": "inner"}],
              "description": "outer"})},
    {"name": "negative-score", "schema": obj(t={"type": "number", "minimum": -2, "maximum": 2}),
     "answers": {"t": {"type": "score", "score": 0.3, "confidence": 0.2,
                       "probabilities": {"0": 0.1, "1": 0.1, "2": 0.3, "3": 0.3, "4": 0.2}}}},
    {"name": "bool-bounds", "schema": obj(b={"type": "integer", "minimum": False, "maximum": True})},
    {"name": "single-level", "schema": obj(one={"type": "integer", "minimum": 5, "maximum": 5})},
    {"name": "ten-levels", "schema": obj(s={"type": "integer", "minimum": 1, "maximum": 10})},
    {"name": "falsy-description", "schema": obj(x={"type": "boolean", "description": ""})},
    {"name": "pydantic-enum-ref", "inline_defs": True, "schema": {
        "$defs": {"Department": {"enum": ["billing", "support"], "title": "Department", "type": "string"},
                  "Level": {"enum": [0, 1, 2], "title": "Level", "type": "integer"}},
        "properties": {"department": {"$ref": "#/$defs/Department", "description": "Who handles it?"},
                       "level": {"anyOf": [{"$ref": "#/$defs/Level"}, {"type": "null"}], "default": None},
                       "urgent": {"title": "Urgent", "type": "boolean"}},
        "required": ["department"], "title": "Ticket", "type": "object"},
     "answers": {"department": {"type": "choice", "choice": "support", "confidence": 0.8,
                                "probabilities": {"billing": 0.1, "support": 0.9}},
                 "level": {"type": "choice", "choice": "2", "confidence": 0.5,
                           "probabilities": {"0": 0.2, "1": 0.2, "2": 0.6}},
                 "urgent": {"type": "noul", "noul": 0.1, "confidence": 0.9}}},
    {"name": "definitions-ref", "inline_defs": True, "schema": {
        "definitions": {"Color": {"enum": ["red", "green"], "type": "string"}},
        "properties": {"color": {"$ref": "#/definitions/Color"}}}},
    # rejections
    {"name": "reject-free-string", "schema": obj(name={"type": "string"})},
    {"name": "reject-array", "schema": obj(tags={"type": "array", "items": {"type": "string"}})},
    {"name": "reject-nested-object", "schema": obj(addr={"type": "object", "properties": {}})},
    {"name": "reject-remote-ref", "schema": obj(a={"$ref": "https://example.com/a.json"})},
    {"name": "reject-two-variants", "schema": obj(value={"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}], "default": None})},
    {"name": "reject-three-oneof", "schema": obj(value={"oneOf": [{"enum": [1]}, {"enum": [2]}, {"type": "boolean"}]})},
    {"name": "reject-only-null", "schema": obj(nothing={"anyOf": [{"type": "null"}]})},
    {"name": "reject-unbounded", "schema": obj(n={"type": "integer", "minimum": 0})},
    {"name": "reject-float-bounds", "schema": obj(n={"type": "number", "minimum": 0.0, "maximum": 1.0})},
    {"name": "reject-max-below-min", "schema": obj(n={"type": "integer", "minimum": 3, "maximum": 1})},
    {"name": "reject-too-wide", "schema": obj(n={"type": "integer", "minimum": 0, "maximum": 100})},
    {"name": "reject-huge-span", "schema": obj(n={"type": "integer", "minimum": -10**30, "maximum": 10**30})},
    {"name": "reject-too-many-properties", "schema": obj(**{"p%d" % i: {"type": "boolean"} for i in range(33)})},
    {"name": "max-properties", "schema": obj(**{"p%d" % i: {"type": "boolean"} for i in range(32)})},
    {"name": "reject-too-many-options", "schema": obj(a={"type": "string", "enum": ["v%d" % i for i in range(33)]})},
    {"name": "max-options", "schema": obj(a={"type": "string", "enum": ["v%d" % i for i in range(32)]})},
    {"name": "reject-empty-enum", "schema": obj(a={"enum": []})},
    {"name": "reject-array-root", "schema": {"type": "array"}},
    {"name": "reject-list-root", "schema": [1, 2]},
    {"name": "reject-string-root", "schema": "object"},
    {"name": "reject-no-properties", "schema": {"type": "object"}},
    {"name": "reject-empty-properties", "schema": {"type": "object", "properties": {}}},
    {"name": "reject-properties-list", "schema": {"type": "object", "properties": [{"type": "boolean"}]}},
    {"name": "reject-property-not-object", "schema": obj(a="boolean")},
    {"name": "reject-empty-property", "schema": obj(a={})},
    {"name": "reject-null-type", "schema": obj(a={"type": "null"})},
    {"name": "reject-unsupported-repr", "schema": obj(a={"description": "It's \"x\"", "format": "date", "n": 1.5, "ok": True, "z": None})},
    {"name": "reject-first-bad-property-wins", "schema": obj(ok={"type": "boolean"}, bad={"type": "string"}, worse={"type": "array"})},
]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen.py /path/to/upstream-laya-checkout")
    st = load_structured(sys.argv[1])
    out = []
    for case in CASES:
        schema = case["schema"]
        planned = inline_defs(schema) if case.get("inline_defs") else schema
        row = {"name": case["name"], "schema": schema}
        try:
            fields = st.plan_from_json_schema(planned)
        except st.SchemaError as exc:
            row["error"] = str(exc)
            out.append(row)
            continue
        row["questions"] = {f.name: f.question for f in fields}
        if "answers" in case:
            row["answers"] = case["answers"]
            values = st.answers_to_json(case["answers"], planned)
            details = st._details(values, case["answers"], {})
            row["values"] = values
            row["confidence"] = details.confidence
            row["probabilities"] = details.probabilities
        out.append(row)
    json.dump({"source": "NandhaKishorM/laya laya/structured.py (03f84583)", "cases": out},
              sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
