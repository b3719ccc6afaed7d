package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/laya-metal/laya/internal/half"
	"github.com/laya-metal/laya/metal"
)

func splitIndex(s string) (int, string, error) {
	i, rest, ok := strings.Cut(s, "=")
	if !ok {
		return 0, "", errors.New("want INDEX=VALUE")
	}
	n, err := strconv.Atoi(i)
	if err != nil || n < 0 || n > 31 {
		return 0, "", fmt.Errorf("index %q must be 0..31", i)
	}
	return n, rest, nil
}

func parseSize(s string) (metal.Size3, error) {
	parts := strings.Split(s, ",")
	if len(parts) > 3 {
		return metal.Size3{}, fmt.Errorf("%q has more than 3 dimensions", s)
	}
	v := [3]int{1, 1, 1}
	for i, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 0 {
			return metal.Size3{}, fmt.Errorf("%q: want X[,Y[,Z]] of non-negative integers", s)
		}
		v[i] = n
	}
	return metal.Size3{X: v[0], Y: v[1], Z: v[2]}, nil
}

// elemTypes are the element types of data specs and dumps, by size.
var elemTypes = map[string]int{
	"f32": 4, "f16": 2, "bf16": 2, "i8": 1, "u8": 1, "i16": 2, "u16": 2, "i32": 4, "u32": 4, "i64": 8, "u64": 8,
}

// parseData reads @FILE, zeros:N or a sequence of TYPE:v1,v2,... groups
// (u32:4,f32:0.5 is a u32 then a f32) as little-endian bytes.
func parseData(spec string) ([]byte, error) {
	if path, ok := strings.CutPrefix(spec, "@"); ok {
		b, err := os.ReadFile(path)
		if err == nil && len(b) == 0 {
			err = fmt.Errorf("%s is empty", path)
		}
		return b, err
	}
	if n, ok := strings.CutPrefix(spec, "zeros:"); ok {
		size, err := strconv.Atoi(n)
		if err != nil || size <= 0 {
			return nil, fmt.Errorf("zeros:%s: want a positive byte count", n)
		}
		return make([]byte, size), nil
	}
	var out []byte
	typ := ""
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if t, v, ok := strings.Cut(item, ":"); ok {
			typ, item = t, v
		}
		if typ == "" {
			return nil, fmt.Errorf("%q: want @FILE, zeros:N or TYPE:values (f32, f16, bf16, i8..i64, u8..u64, pad)", spec)
		}
		var err error
		if out, err = appendValue(out, typ, item); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%q gives no bytes", spec)
	}
	return out, nil
}

func appendValue(out []byte, typ, s string) ([]byte, error) {
	le := binary.LittleEndian
	bad := func(err error) ([]byte, error) { return nil, fmt.Errorf("%s value %q: %w", typ, s, err) }
	switch typ {
	case "pad":
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("pad:%s: want a byte count", s)
		}
		return append(out, make([]byte, n)...), nil
	case "f32", "f16", "bf16":
		v, err := strconv.ParseFloat(s, 32)
		if err != nil {
			return bad(err)
		}
		switch typ {
		case "f32":
			return le.AppendUint32(out, math.Float32bits(float32(v))), nil
		case "f16":
			return le.AppendUint16(out, half.Float32ToFloat16(float32(v))), nil
		}
		return le.AppendUint16(out, half.Float32ToBFloat16(float32(v))), nil
	case "i8", "i16", "i32", "i64":
		size := elemTypes[typ]
		v, err := strconv.ParseInt(s, 0, 8*size)
		if err != nil {
			return bad(err)
		}
		return appendInt(out, uint64(v), size), nil
	case "u8", "u16", "u32", "u64":
		size := elemTypes[typ]
		v, err := strconv.ParseUint(s, 0, 8*size)
		if err != nil {
			return bad(err)
		}
		return appendInt(out, v, size), nil
	}
	return nil, fmt.Errorf("type %q: want f32, f16, bf16, i8, u8, i16, u16, i32, u32, i64, u64 or pad", typ)
}

func appendInt(out []byte, v uint64, size int) []byte {
	for i := 0; i < size; i++ {
		out = append(out, byte(v>>(8*i)))
	}
	return out
}

// formatValues prints data as space-separated values of typ.
func formatValues(data []byte, typ string) string {
	le := binary.LittleEndian
	if typ == "hex" {
		var vals []string
		for _, b := range data {
			vals = append(vals, fmt.Sprintf("%02x", b))
		}
		return strings.Join(vals, " ")
	}
	size := elemTypes[typ]
	vals := make([]string, 0, len(data)/size)
	for i := 0; i+size <= len(data); i += size {
		var s string
		switch typ {
		case "f32":
			s = strconv.FormatFloat(float64(math.Float32frombits(le.Uint32(data[i:]))), 'g', -1, 32)
		case "f16":
			s = strconv.FormatFloat(float64(half.Float16ToFloat32(le.Uint16(data[i:]))), 'g', -1, 32)
		case "bf16":
			s = strconv.FormatFloat(float64(half.BFloat16ToFloat32(le.Uint16(data[i:]))), 'g', -1, 32)
		case "i8":
			s = strconv.Itoa(int(int8(data[i])))
		case "u8":
			s = strconv.Itoa(int(data[i]))
		case "i16":
			s = strconv.Itoa(int(int16(le.Uint16(data[i:]))))
		case "u16":
			s = strconv.Itoa(int(le.Uint16(data[i:])))
		case "i32":
			s = strconv.Itoa(int(int32(le.Uint32(data[i:]))))
		case "u32":
			s = strconv.FormatUint(uint64(le.Uint32(data[i:])), 10)
		case "i64":
			s = strconv.FormatInt(int64(le.Uint64(data[i:])), 10)
		case "u64":
			s = strconv.FormatUint(le.Uint64(data[i:]), 10)
		}
		vals = append(vals, s)
	}
	return strings.Join(vals, " ")
}
