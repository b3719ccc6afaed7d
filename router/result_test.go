package router

import (
	"context"
	"strings"
	"testing"

	"github.com/laya-metal/laya"
)

func TestRoutedResultJSON(t *testing.T) {
	r := mustRouter(t, WithLoader(newFakeLoader().load))
	res, err := r.Predict(context.Background(), laya.Text("Bonjour, je veux annuler mon abonnement pour le mois prochain."), laya.Questions{{ID: "q", Definition: laya.NoulQuestion("x")}}, RouteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := res.String()
	want := `"routing": {"model": "multilingual", "repo": "convaiinnovations/laya/multilingual", "reason": "Latin script but language looks like 'fr', not English", "detection": {"script": "latin", "script_profile": {"latin": 1.0}, "language": "fr", "is_english": false, "language_undecided": false, "diacritic_rate": 0.0, "non_latin_fraction": 0.0, "mixed_segment": null}, "workflow": null}}`
	if !strings.HasSuffix(got, want) || !strings.HasPrefix(got, `{"model": "laya-rl-agent"`) {
		t.Errorf("routed result JSON =\n%s\nwant suffix\n%s", got, want)
	}
}
