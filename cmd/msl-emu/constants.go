package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/laya-metal/laya/metal/emu"
)

// constantIndex resolves a --constant key: an index, or the name of a
// declared function constant.
func constantIndex(key string, decls []emu.FunctionConstantInfo) (int, error) {
	if n, err := strconv.Atoi(key); err == nil {
		if n < 0 || n > 65535 {
			return 0, fmt.Errorf("index %d must be 0..65535", n)
		}
		return n, nil
	}
	var names []string
	for _, c := range decls {
		if c.Name == key {
			return c.Index, nil
		}
		names = append(names, c.Name)
	}
	return 0, fmt.Errorf("no function constant named %q (declared: %s)", key, strings.Join(names, ", "))
}

// canonicalType maps the spellings of one MSL scalar type to one name.
func canonicalType(t string) string {
	switch t {
	case "int32_t":
		return "int"
	case "uint32_t", "unsigned int":
		return "uint"
	case "int16_t":
		return "short"
	case "uint16_t":
		return "ushort"
	case "int8_t":
		return "char"
	case "uint8_t":
		return "uchar"
	case "int64_t":
		return "long"
	case "uint64_t", "size_t":
		return "ulong"
	}
	return t
}

// parseConstant reads [TYPE:]VALUE. The value's Go type only carries what
// was written (bool, integer, float); the emulator converts it to the
// declared type and refuses values that do not fit.
func parseConstant(spec string) (any, error) {
	typ, v, ok := strings.Cut(spec, ":")
	if !ok {
		typ, v = "", spec
	}
	switch typ {
	case "bool":
		return strconv.ParseBool(v)
	case "int", "short", "char", "long", "int32_t", "int16_t", "int8_t", "int64_t":
		return strconv.ParseInt(v, 0, 64)
	case "uint", "ushort", "uchar", "ulong", "uint32_t", "uint16_t", "uint8_t", "uint64_t", "size_t":
		n, err := strconv.ParseUint(v, 0, 64)
		return n, err
	case "float", "half", "bfloat":
		return strconv.ParseFloat(v, 64)
	case "":
		if b, err := strconv.ParseBool(v); err == nil && (v == "true" || v == "false") {
			return b, nil
		}
		if n, err := strconv.ParseInt(v, 0, 64); err == nil {
			return n, nil
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return f, nil
		}
		return nil, fmt.Errorf("value %q: want true, false, an integer or a float", v)
	}
	return nil, fmt.Errorf("type %q: want bool, int, uint, short, ushort, char, uchar, long, ulong, float, half or bfloat", typ)
}
