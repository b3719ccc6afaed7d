package preset

import (
	"encoding/json"
	"github.com/laya-metal/laya"
	"os"
	"testing"
)

// testdata/presets/presets.json holds json.dumps of laya-mlx's preset dicts
// (presets.py run under CPython), so ids, order, texts and nulls are checked
// against the source rather than against this package.
func TestPresetsMatchLayaMLX(t *testing.T) {
	b, err := os.ReadFile("../testdata/presets/presets.json")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]string
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		qs   laya.Questions
	}{
		{"triage", TriageQuestions()},
		{"email", EmailQuestions()},
		{"email", EmailQuestionsWith(DefaultEmailCategories()...)},
		{"email_custom", EmailQuestionsWith(laya.Criterion{Label: "a", Description: "first"}, laya.Criterion{Label: "b", Description: "second"})},
		{"guard", GuardQuestions()},
		{"moderation", ModerationQuestions()},
		{"router", RouterQuestions()},
	}
	for _, tt := range tests {
		if got := tt.qs.Value().String(); got != want[tt.name] {
			t.Errorf("%s preset =\n%s\nwant\n%s", tt.name, got, want[tt.name])
		}
	}
}

func TestEmailQuestionsLabels(t *testing.T) {
	qs := EmailQuestions("billing", "support")
	got := qs[0].Definition.String()
	want := `{"type": "choice", "instructions": "Which team should handle the email in ` + "`body`" + `?", "criteria": ["billing", "support"]}`
	if got != want {
		t.Errorf("category = %s, want %s", got, want)
	}
	if len(qs) != 5 || qs[4].ID != "needs_reply" {
		t.Errorf("EmailQuestions ids = %v", qs)
	}
}
