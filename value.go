package laya

import "github.com/laya-metal/laya/pyjson"

// Value is a JSON value as upstream's Python reads and writes it: object key
// order and number literals kept, written as json.dumps writes it. Build and
// parse values with package pyjson (pyjson.Parse, pyjson.String,
// pyjson.Object, pyjson.ValueOf, ...); states, questions and answers are
// Values.
type Value = pyjson.Value

// ErrInvalidJSON reports input that is not a JSON value Python's json.loads
// would accept (it is pyjson.ErrInvalid; a syntax error is a
// *pyjson.DecodeError worded as CPython's).
var ErrInvalidJSON = pyjson.ErrInvalid
