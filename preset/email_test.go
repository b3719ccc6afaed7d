package preset

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/laya-metal/laya/pyjson"
)

// testdata/email/clean.json: bodies (English, Portuguese, Spanish quoted
// replies, signatures, device footers, disclaimers) with the output of
// laya-mlx's clean_email_body run under CPython 3.12.
func TestCleanEmailBodyMatchesLayaMLX(t *testing.T) {
	b, err := os.ReadFile("../testdata/email/clean.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Name string `json:"name"`
		Body string `json:"body"`
		Max  int    `json:"max"`
		Want string `json:"want"`
	}
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 40 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			if got := CleanEmailBody(tc.Body, tc.Max); got != tc.Want {
				t.Errorf("CleanEmailBody =\n%q\nwant\n%q", got, tc.Want)
			}
		})
	}
}

func TestCleanEmailBodyDefaultLimit(t *testing.T) {
	got := CleanEmailBody(strings.Repeat("a", 5000), 0)
	if len(got) != DefaultEmailMaxChars {
		t.Errorf("len = %d, want %d", len(got), DefaultEmailMaxChars)
	}
}

func TestEmailState(t *testing.T) {
	body := "Please refund order 7.\n\nOn Mon, 3 Mar 2025, Bob <b@c.d> wrote:\n> old"
	tests := []struct {
		name string
		opts []EmailOption
		want string
	}{
		{"plain", nil, `{"subject": "Refund", "body": "Please refund order 7."}`},
		{"sender and extras", []EmailOption{WithSender("ana@x.com"), WithEmailField("priority", pyjson.Int(2)), WithEmailField("skipped", pyjson.Null())},
			`{"subject": "Refund", "body": "Please refund order 7.", "from": "ana@x.com", "priority": 2}`},
		{"extra replaces in place", []EmailOption{WithEmailField("subject", pyjson.String("Other"))},
			`{"subject": "Other", "body": "Please refund order 7."}`},
		{"raw body", []EmailOption{WithRawBody()},
			`{"subject": "Refund", "body": "Please refund order 7.\n\nOn Mon, 3 Mar 2025, Bob <b@c.d> wrote:\n> old"}`},
	}
	for _, tt := range tests {
		got := EmailState("  Refund \n", body, tt.opts...).Serialize()
		if got != tt.want {
			t.Errorf("%s: EmailState =\n%s\nwant\n%s", tt.name, got, tt.want)
		}
	}
}
