package main

import (
	"fmt"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/preset"
)

// presetNames lists the built-in question sets, as --preset spells them.
const presetNames = "triage, email, guard, moderation or router"

// presetQuestions returns a built-in question set by its --preset name.
func presetQuestions(name string) (laya.Questions, error) {
	switch name {
	case "triage":
		return preset.TriageQuestions(), nil
	case "email":
		return preset.EmailQuestions(), nil
	case "guard":
		return preset.GuardQuestions(), nil
	case "moderation":
		return preset.ModerationQuestions(), nil
	case "router":
		return preset.RouterQuestions(), nil
	}
	return nil, fmt.Errorf("--preset %q: use %s", name, presetNames)
}
