package laya

import (
	"errors"
	"strings"
	"testing"

	"github.com/laya-metal/laya/pyjson"
)

// ValueRequest takes a decoded body through the checks ParseRequest makes on the text.
func TestValueRequest(t *testing.T) {
	for _, tc := range []struct {
		body    string
		wantErr string // "" when the request is valid
		state   string
		ids     []string
	}{
		{`{"state": {"z": 1, "a": [1.50]}, "questions": {"b": {"type":"noul","instructions":"x"}, "a": {"type":"noul","instructions":"y"}}}`, "", `{"z": 1, "a": [1.5]}`, []string{"b", "a"}},
		{`{"questions": {}, "state": "plain [MASK] text"}`, "", "plain [MASK] text", nil},
		{`[]`, "a request is a JSON object", "", nil},
		{`"text"`, "got str", "", nil},
		{`null`, "got NoneType", "", nil},
		{`{"questions": {}}`, `no "state"`, "", nil},
		{`{"state": ""}`, `no "questions"`, "", nil},
		{`{"state": "", "questions": []}`, "questions", "", nil},
		{`{"state": "", "questions": {}, "lang": "en"}`, `unknown field "lang"`, "", nil},
	} {
		v, err := pyjson.Parse([]byte(tc.body))
		if err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		req, err := ValueRequest(v)
		if tc.wantErr != "" {
			if !errors.Is(err, ErrInvalidRequest) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ValueRequest(%s) = %v, want ErrInvalidRequest saying %q", tc.body, err, tc.wantErr)
			}
			if _, perr := ParseRequest([]byte(tc.body)); perr == nil || perr.Error() != err.Error() {
				t.Errorf("ParseRequest(%s) = %v, ValueRequest %v: the two disagree", tc.body, perr, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ValueRequest(%s): %v", tc.body, err)
			continue
		}
		if got := req.State.Serialize(); got != tc.state {
			t.Errorf("%s: state %s, want %s", tc.body, got, tc.state)
		}
		var ids []string
		for _, q := range req.Questions {
			ids = append(ids, q.ID)
		}
		if !equalStrings(ids, tc.ids) {
			t.Errorf("%s: questions %v, want %v", tc.body, ids, tc.ids)
		}
	}
}
