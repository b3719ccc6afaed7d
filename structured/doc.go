// Package structured answers a JSON schema or a Go struct in one forward pass: each
// property is one Laya question, and the answers come back as values in the schema's
// shape and types (upstream Laya's agent.decide(state, schema=...), laya/structured.py).
//
//	d, err := structured.Decide(ctx, agent, laya.Text("I was charged twice, refund me."), []byte(`{
//	  "type": "object", "properties": {
//	    "department": {"type": "string", "enum": ["billing", "support", "sales"]},
//	    "urgency": {"type": "integer", "minimum": 0, "maximum": 2},
//	    "needs_human": {"type": "boolean"}}}`))
//	d.Values // {"department": "billing", "urgency": 2, "needs_human": true}
//
// # The subset
//
// PlanSchema plans one question per property: enum or const → choice over the values as
// labels, answered with the original value and JSON type; boolean → noul, true when
// P(true) ≥ 0.5; integer or number with integer minimum and maximum at most
// MaxScoreLevels apart → score, answered minimum + the likeliest level. The nullable
// spellings (a type list with "null"; anyOf/oneOf of one variant and null) plan as
// their variant, local "#/$defs/…" and "#/definitions/…" references (pydantic v2 enums)
// are resolved, a oneOf/anyOf of titled consts is a choice labelled by the titles, and
// "description" becomes the question's instructions. Anything else is a *SchemaError
// naming the path, with upstream's message (errors.Is ErrSchema): free strings,
// arrays, nested objects, recursion, unions of two variants or of only null, unbounded
// numbers, more than MaxSchemaProperties properties, MaxSchemaOptions options or
// MaxScoreLevels levels. The planner reads a fixed number of levels of a schema, so
// a deep or wide one costs no more than its size.
//
// # Go structs
//
// DecideInto and PlanFor take a struct type as the schema, through the same planner:
// bool → noul; a type implementing Enum (a Go enum), or a string or number with an
// enum= option → choice; an integer or float with min= and max= → score; a pointer is
// the nullable form. The `laya` tag holds the instructions and, after ";", the options
// (`laya:"How urgent is it?;min=0;max=2"`); the json tag names the property. Errors
// name the Go field.
//
// # Results
//
// A Decision holds the values, each field's confidence and probabilities (a choice's
// labels, a score's levels, a noul's false/true), the usage, and the routing when a
// RoutedPredictor answered (a router's Predictor). Plan.Questions and Plan.Project are
// the two halves, for callers that run the questions themselves (laya serve's OpenAI
// routes batch them with other requests).
package structured
