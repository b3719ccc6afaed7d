package pyjson_test

import (
	"fmt"

	"github.com/laya-metal/laya/pyjson"
)

// Parse keeps key order and literals; Dumps writes what Python's
// json.dumps(json.loads(text), ensure_ascii=False) writes.
func ExampleParse() {
	v, err := pyjson.Parse([]byte(`{"b": 1.50, "a": [1e2, "é<&>"], "b2": NaN, "a": 7}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(pyjson.Dumps(v))
	fmt.Println(pyjson.Repr(v))

	_, err = pyjson.Parse([]byte(`{"state": "x",}`))
	fmt.Println(err)
	// Output:
	// {"b": 1.5, "a": 7, "b2": NaN}
	// {'b': 1.5, 'a': 7, 'b2': nan}
	// pyjson: invalid JSON: Illegal trailing comma before end of object: line 1 column 14 (char 13)
}

// Object builds a value in a chosen order; Float writes Python's repr.
func ExampleObject() {
	v := pyjson.Object(
		pyjson.Member{Key: "model", Value: pyjson.String("laya")},
		pyjson.Member{Key: "temperature", Value: pyjson.Float(1)},
		pyjson.Member{Key: "eps", Value: pyjson.Float(1e-05)},
	)
	fmt.Println(v)
	// Output: {"model": "laya", "temperature": 1.0, "eps": 1e-05}
}
