package structured

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/pyjson"
)

// Enum is a Go enum: a named type that lists its values. A struct field of such a type
// becomes a choice over them, and DecideInto stores the chosen one. The values' JSON
// form (encoding/json) is what the model reads as the option label.
//
//	type Department string
//
//	func (Department) EnumValues() []any { return []any{Billing, Support, Sales} }
type Enum interface {
	EnumValues() []any
}

var enumType = reflect.TypeFor[Enum]()

// structPlan maps a struct's fields to the plan's properties.
type structPlan struct {
	typ    reflect.Type
	fields []structField
}

type structField struct {
	index  []int
	goName string
	enum   []reflect.Value // Go enum values, in option order
}

var structPlans sync.Map // reflect.Type → *Plan or error

// PlanFor plans the struct type T as a schema: one question per exported field, named
// by its json tag (else the field name); `json:"-"` or `laya:"-"` skips a field.
//
// A field's kind decides its question: bool → noul; a type implementing Enum, or a
// string or number with an enum= option → choice; an integer or float with min= and
// max= → score. A pointer is the nullable form of its element. The `laya` tag holds
// the instructions and options, separated by ";":
//
//	Department Department `json:"department" laya:"Which team should handle this?"`
//	Urgency    int        `json:"urgency" laya:"How urgent is it?;min=0;max=2"`
//	Channel    string     `json:"channel" laya:"enum=email|chat|phone"`
//	NeedsHuman bool       `json:"needs_human"`
//
// The struct is planned as the JSON schema it spells, by the same planner as
// PlanSchema: rejections are the same *SchemaError, with Field naming the Go field.
func PlanFor[T any]() (*Plan, error) { return planType(reflect.TypeFor[T]()) }

func planType(t reflect.Type) (*Plan, error) {
	if cached, ok := structPlans.Load(t); ok {
		if err, isErr := cached.(error); isErr {
			return nil, err
		}
		return cached.(*Plan), nil
	}
	p, err := buildStructPlan(t)
	if err != nil {
		structPlans.Store(t, err)
		return nil, err
	}
	structPlans.Store(t, p)
	return p, nil
}

func buildStructPlan(t reflect.Type) (*Plan, error) {
	if t.Kind() != reflect.Struct {
		return nil, &SchemaError{Field: t.String(), Message: fmt.Sprintf("expected a struct, got %s", t.Kind())}
	}
	sp := &structPlan{typ: t}
	var props []pyjson.Member
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, skip := jsonName(f)
		tag, hasTag := f.Tag.Lookup("laya")
		if skip || (hasTag && tag == "-") {
			continue
		}
		goName := t.String() + "." + f.Name
		prop, enum, err := fieldSchema(f.Type, tag)
		if err != nil {
			return nil, &SchemaError{Path: "properties." + name, Field: goName, Message: err.Error()}
		}
		props = append(props, pyjson.Member{Key: name, Value: prop})
		sp.fields = append(sp.fields, structField{index: f.Index, goName: goName, enum: enum})
	}
	if len(props) > 0 && len(pyjson.Object(props...).Members()) != len(props) {
		return nil, &SchemaError{Field: t.String(), Message: "two fields have the same JSON name"}
	}
	schema := pyjson.Object(
		pyjson.Member{Key: "type", Value: pyjson.String("object")},
		pyjson.Member{Key: "properties", Value: pyjson.Object(props...)},
	)
	plan, err := PlanSchema(schema)
	if err != nil {
		var se *SchemaError
		if errors.As(err, &se) {
			se.Field = t.String()
			for i, m := range props {
				if se.Path == "properties."+m.Key {
					se.Field = sp.fields[i].goName
				}
			}
		}
		return nil, err
	}
	plan.goType = sp
	return plan, nil
}

func jsonName(f reflect.StructField) (name string, skip bool) {
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", true
	}
	if n, _, _ := strings.Cut(tag, ","); n != "" {
		return n, false
	}
	return f.Name, false
}

// fieldSchema spells a Go field as the JSON schema property the planner reads.
func fieldSchema(t reflect.Type, tag string) (laya.Value, []reflect.Value, error) {
	var (
		members          []pyjson.Member
		enumText         string
		hasEnum          bool
		minText, maxText string
	)
	for part := range strings.SplitSeq(tag, ";") {
		part = strings.TrimSpace(part)
		switch {
		case part == "":
		case strings.HasPrefix(part, "enum="):
			enumText, hasEnum = part[len("enum="):], true
		case strings.HasPrefix(part, "min="):
			minText = part[len("min="):]
		case strings.HasPrefix(part, "max="):
			maxText = part[len("max="):]
		default:
			if _, dup := find(members, "description"); dup {
				return laya.Value{}, nil, fmt.Errorf("laya tag %q has two instructions; separate options with ';' as key=value", tag)
			}
			members = append(members, pyjson.Member{Key: "description", Value: pyjson.String(part)})
		}
	}
	nullable := false
	for t.Kind() == reflect.Pointer {
		t, nullable = t.Elem(), true
	}
	typeName := func(s string) laya.Value {
		if nullable {
			return pyjson.Array(pyjson.String(s), pyjson.String("null"))
		}
		return pyjson.String(s)
	}
	var goEnum []reflect.Value
	switch {
	case t.Implements(enumType) || reflect.PointerTo(t).Implements(enumType):
		values := reflect.New(t).Interface().(Enum).EnumValues()
		items := make([]laya.Value, len(values))
		for i, v := range values {
			rv := reflect.ValueOf(v)
			if !rv.IsValid() || !rv.Type().ConvertibleTo(t) {
				return laya.Value{}, nil, fmt.Errorf("EnumValues of %s returned %T, not a %s", t, v, t)
			}
			raw, err := json.Marshal(v)
			if err != nil {
				return laya.Value{}, nil, fmt.Errorf("enum value %v: %w", v, err)
			}
			if items[i], err = pyjson.Parse(raw); err != nil {
				return laya.Value{}, nil, fmt.Errorf("enum value %v: %w", v, err)
			}
			goEnum = append(goEnum, rv.Convert(t))
		}
		members = append(members, pyjson.Member{Key: "enum", Value: pyjson.Array(items...)})
	case hasEnum:
		var items []laya.Value
		for s := range strings.SplitSeq(enumText, "|") {
			switch t.Kind() {
			case reflect.String:
				items = append(items, pyjson.String(s))
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
				reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
				reflect.Float32, reflect.Float64:
				if _, err := strconv.ParseFloat(s, 64); err != nil {
					return laya.Value{}, nil, fmt.Errorf("enum value %q is not a number", s)
				}
				v, err := pyjson.Parse([]byte(s))
				if err != nil {
					return laya.Value{}, nil, fmt.Errorf("enum value %q is not a number", s)
				}
				items = append(items, v)
			default:
				return laya.Value{}, nil, fmt.Errorf("enum= needs a string or number field, not %s", t)
			}
		}
		members = append(members, pyjson.Member{Key: "enum", Value: pyjson.Array(items...)})
	}
	switch t.Kind() {
	case reflect.Bool:
		members = append(members, pyjson.Member{Key: "type", Value: typeName("boolean")})
	case reflect.String:
		members = append(members, pyjson.Member{Key: "type", Value: typeName("string")})
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		members = append(members, pyjson.Member{Key: "type", Value: typeName("integer")})
	case reflect.Float32, reflect.Float64:
		members = append(members, pyjson.Member{Key: "type", Value: typeName("number")})
	case reflect.Slice, reflect.Array:
		members = append(members, pyjson.Member{Key: "type", Value: typeName("array")})
	default:
		members = append(members, pyjson.Member{Key: "type", Value: typeName("object")})
	}
	for _, b := range []struct{ key, text string }{{"minimum", minText}, {"maximum", maxText}} {
		if b.text == "" {
			continue
		}
		n, err := strconv.ParseInt(b.text, 10, 64)
		if err != nil {
			return laya.Value{}, nil, fmt.Errorf("%s=%q is not an integer", b.key[:3], b.text)
		}
		members = append(members, pyjson.Member{Key: b.key, Value: pyjson.Int(n)})
	}
	return pyjson.Object(members...), goEnum, nil
}

func find(ms []pyjson.Member, key string) (laya.Value, bool) {
	for _, m := range ms {
		if m.Key == key {
			return m.Value, true
		}
	}
	return laya.Value{}, false
}

// DecideInto answers the struct *dst points to as a schema (see PlanFor) about state
// in one pass of p, and stores the decided values in it. The Decision carries the
// confidence and probabilities per field.
//
//	var t Ticket
//	d, err := structured.DecideInto(ctx, agent, laya.Text("I was charged twice"), &t)
func DecideInto(ctx context.Context, p laya.Predictor, state laya.State, dst any) (*Decision, error) {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return nil, fmt.Errorf("structured: DecideInto needs a non-nil pointer to a struct, got %T", dst)
	}
	plan, err := planType(rv.Type().Elem())
	if err != nil {
		return nil, err
	}
	d, err := plan.Decide(ctx, p, state)
	if err != nil {
		return nil, err
	}
	if err := plan.store(d, rv.Elem()); err != nil {
		return nil, err
	}
	return d, nil
}

// store sets the struct's fields from a decision of its own plan.
func (pl *Plan) store(d *Decision, dst reflect.Value) error {
	sp := pl.goType
	for i, sf := range sp.fields {
		fv := dst.FieldByIndex(sf.index)
		for fv.Kind() == reflect.Pointer {
			if fv.IsNil() {
				fv.Set(reflect.New(fv.Type().Elem()))
			}
			fv = fv.Elem()
		}
		val := d.Fields[i].Value
		if sf.enum != nil {
			for j, opt := range pl.Fields[i].Options {
				if pyjson.Dumps(opt) == pyjson.Dumps(val) {
					fv.Set(sf.enum[j])
					break
				}
			}
			continue
		}
		if err := setScalar(fv, val); err != nil {
			return fmt.Errorf("structured: %s: %w", sf.goName, err)
		}
	}
	return nil
}

func setScalar(fv reflect.Value, val laya.Value) error {
	switch fv.Kind() {
	case reflect.Bool:
		fv.SetBool(val.Bool())
	case reflect.String:
		fv.SetString(val.Str())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(val.Literal(), 10, 64)
		if err != nil || fv.OverflowInt(n) {
			return fmt.Errorf("value %s does not fit %s", val.Literal(), fv.Type())
		}
		fv.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(val.Literal(), 10, 64)
		if err != nil || fv.OverflowUint(n) {
			return fmt.Errorf("value %s does not fit %s", val.Literal(), fv.Type())
		}
		fv.SetUint(n)
	case reflect.Float32, reflect.Float64:
		fv.SetFloat(val.Float64())
	default:
		return fmt.Errorf("cannot store into %s", fv.Type())
	}
	return nil
}
