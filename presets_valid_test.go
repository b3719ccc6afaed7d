package laya_test

import (
	"testing"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/preset"
	"github.com/laya-metal/laya/pyjson"
)

// Every preset passes the validation Predict runs before tokenizing (the
// presets' text is checked against laya-mlx in package preset).
func TestPresetsPassValidation(t *testing.T) {
	for name, qs := range map[string]laya.Questions{
		"triage":       preset.TriageQuestions(),
		"email":        preset.EmailQuestions(),
		"email_custom": preset.EmailQuestionsWith(laya.Criterion{Label: "a", Description: "first"}, laya.Criterion{Label: "b", Description: "second"}),
		"guard":        preset.GuardQuestions(),
		"moderation":   preset.ModerationQuestions(),
		"router":       preset.RouterQuestions(),
	} {
		if err := laya.ValidateQuestions(qs); err != nil {
			t.Errorf("%s preset is rejected by validation: %v", name, err)
		}
	}
	if err := laya.ValidateQuestions(laya.Questions{{ID: "q", Definition: pyjson.String("x")}}); err == nil {
		t.Error("validation accepts a definition that is not an object; this test could not fail")
	}
}
