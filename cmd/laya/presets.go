package main

import (
	"fmt"

	"github.com/laya-metal/laya"
)

// presetNames lists the built-in question sets, as --preset spells them.
const presetNames = "triage, email, guard, moderation or router"

// presetQuestions returns a built-in question set by its --preset name.
func presetQuestions(name string) (laya.Questions, error) {
	switch name {
	case "triage":
		return laya.TriageQuestions(), nil
	case "email":
		return laya.EmailQuestions(), nil
	case "guard":
		return laya.GuardQuestions(), nil
	case "moderation":
		return laya.ModerationQuestions(), nil
	case "router":
		return laya.RouterQuestions(), nil
	}
	return nil, fmt.Errorf("--preset %q: use %s", name, presetNames)
}
