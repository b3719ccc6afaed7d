// Package pyjson is JSON as upstream Laya's Python reads and writes it.
//
// Upstream builds its prompts and its answers with Python's json module, so
// the exact bytes matter twice: the serialized state is what the tokenizer
// reads, and the answer JSON is compared byte for byte. Go's encoding/json
// differs from Python's in every way that shows (map key order, HTML
// escaping, float formatting, the ", " and ": " separators, NaN and
// Infinity, duplicate keys), so this package holds:
//
//   - Value, an order-keeping JSON value that keeps number literals as
//     written (4411 stays an int, 1.50 is Python's float 1.5);
//   - Parse, json.loads: key order kept, a repeated key keeps its first
//     position and its last value, NaN/Infinity/-Infinity accepted, and
//     syntax errors worded as CPython's json.JSONDecodeError
//     ("Expecting value: line 1 column 9 (char 8)");
//   - Dumps (and Value.String, Value.MarshalJSON), json.dumps(v,
//     ensure_ascii=False) with the default separators, and DumpsPrefix and
//     DumpsSuffix, which write only its first or last bytes;
//   - AppendUnquoted, a JSON string literal's value, decoded by the escape
//     rules Parse uses;
//   - the Python formatting upstream's messages are made of: FloatRepr
//     (repr(float)), StrRepr (repr(str)), Repr, Str, TypeName, FormatG ("%g")
//     and ParseFloat/ToFloat (float()).
//
// The non-finite floats are spelled in exactly one place (nonFinite): repr
// writes nan/inf/-inf, json.dumps writes NaN/Infinity/-Infinity.
//
// Sources: CPython 3.13 Lib/json/encoder.py (ESCAPE_DCT, float.__repr__),
// Lib/json/decoder.py and Modules/_json.c (scanner and its error messages),
// Python/pystrtod.c (repr switches to exponent form when decpt <= -4 or
// decpt > 16), Objects/unicodeobject.c (str.__repr__).
package pyjson
